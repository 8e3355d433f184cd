//! Colour scales of llvm-xray's graphs: a point of an interval is placed between the colours of
//! a ColorBrewer scheme and interpolated in HSV (hue the short way round), then written
//! `#RRGGBB`. Points outside the interval take the scheme's bound colours.
//!
//! * [`Scale::SEQUENTIAL`] (OrRd, 9 colours, `[0, 1]`) colours `graph`'s edges and vertices by
//!   the square root of a statistic over its maximum.
//! * [`Scale::DIVERGING`] (PiYG, 11 colours, `[-1, 1]`) colours `graph-diff` by relative
//!   change; red below the interval (only in the first graph), green above (only in the second).

type Rgb = (u8, u8, u8);

/// A colour scale over an interval.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    lo: f64,
    hi: f64,
    colors: &'static [Rgb],
    below: Rgb,
    above: Rgb,
}

const OR_RD: [Rgb; 9] = [
    (255, 247, 236),
    (254, 232, 200),
    (253, 212, 158),
    (253, 187, 132),
    (252, 141, 89),
    (239, 101, 72),
    (215, 48, 31),
    (179, 0, 0),
    (127, 0, 0),
];

const PI_YG: [Rgb; 11] = [
    (142, 1, 82),
    (197, 27, 125),
    (222, 119, 174),
    (241, 182, 218),
    (253, 224, 239),
    (247, 247, 247),
    (230, 245, 208),
    (184, 225, 134),
    (127, 188, 65),
    (77, 146, 33),
    (39, 100, 25),
];

impl Scale {
    /// ColorBrewer OrRd over `[0, 1]`.
    pub const SEQUENTIAL: Scale = Scale {
        lo: 0.0,
        hi: 1.0,
        colors: &OR_RD,
        below: (255, 247, 236),
        above: (127, 0, 0),
    };

    /// ColorBrewer PiYG over `[-1, 1]`; pure red below, pure green above.
    pub const DIVERGING: Scale = Scale {
        lo: -1.0,
        hi: 1.0,
        colors: &PI_YG,
        below: (255, 0, 0),
        above: (0, 255, 0),
    };

    /// The colour of `point` as `#RRGGBB` (upper-case hex). A NaN (0/0: a statistic whose
    /// maximum is 0) takes the low end of the scale.
    pub fn color(&self, point: f64) -> String {
        let (r, g, b) = self.rgb(point);
        format!("#{r:02X}{g:02X}{b:02X}")
    }

    fn rgb(&self, point: f64) -> Rgb {
        if point.is_nan() {
            return self.colors.first().copied().unwrap_or(self.below);
        }
        if point < self.lo {
            return self.below;
        }
        if point > self.hi {
            return self.above;
        }
        let last = self.colors.len().saturating_sub(1);
        let width = (self.hi - self.lo) / last as f64;
        let offset = point - self.lo;
        let section = ((offset / width).floor() as usize).min(last);
        let t = (offset - section as f64 * width) / width;
        let c0 = self.colors.get(section).copied().unwrap_or(self.below);
        let c1 = self
            .colors
            .get((section + 1).min(last))
            .copied()
            .unwrap_or(self.above);
        hsv_to_rgb(interpolate(rgb_to_hsv(c0), rgb_to_hsv(c1), t))
    }
}

/// Component `i` (mod 3) of a colour.
fn at(c: [f64; 3], i: usize) -> f64 {
    c.get(i % 3).copied().unwrap_or(0.0)
}

/// RGB → (hue in degrees, saturation, value).
fn rgb_to_hsv((r, g, b): Rgb) -> (f64, f64, f64) {
    let c = [
        f64::from(r) / 255.0,
        f64::from(g) / 255.0,
        f64::from(b) / 255.0,
    ];
    // The first index holding the extreme, as the reference computes it.
    let (mut min, mut max) = (0usize, 0usize);
    for i in 1..3 {
        if at(c, i) < at(c, min) {
            min = i;
        }
        if at(c, i) > at(c, max) {
            max = i;
        }
    }
    let chroma = at(c, max) - at(c, min);
    let h_prime = if chroma == 0.0 {
        0.0
    } else {
        (at(c, max + 1) - at(c, max + 2)) / chroma
    } + 2.0 * max as f64;
    let h = if h_prime < 0.0 {
        (h_prime + 6.0) * 60.0
    } else {
        h_prime * 60.0
    };
    let v = at(c, max);
    let s = if v == 0.0 { 0.0 } else { chroma / v };
    (h, s, v)
}

/// Hue the short way round the circle, saturation and value linearly.
fn interpolate(a: (f64, f64, f64), b: (f64, f64, f64), t: f64) -> (f64, f64, f64) {
    let (mut h0, mut h1, mut t_h) = (a.0, b.0, t);
    if h0 > h1 {
        std::mem::swap(&mut h0, &mut h1);
        t_h = 1.0 - t_h;
    }
    let h = if h1 - h0 <= 180.0 {
        h0 + t_h * (h1 - h0)
    } else {
        let h0 = h0 + 360.0;
        (h0 + t_h * (h1 - h0) + 720.0) % 360.0
    };
    (h, a.1 + t * (b.1 - a.1), a.2 + t * (b.2 - a.2))
}

fn hsv_to_rgb((h, s, v): (f64, f64, f64)) -> Rgb {
    let c = v * s;
    let h_prime = h / 60.0;
    let x = c * (1.0 - ((h_prime % 2.0) - 1.0).abs());
    let sector = h_prime as i64;
    // The sector's dominant component gets the chroma, the next (or previous) one `x`.
    let (first, second) = if sector % 2 == 0 { (c, x) } else { (x, c) };
    let lead = (sector / 2).rem_euclid(3);
    let rgb = match lead {
        0 => [first, second, 0.0],
        1 => [0.0, first, second],
        _ => [second, 0.0, first],
    };
    let m = v - c;
    let to8 = |x: f64| (255.0 * (x + m).clamp(0.0, 1.0) + 0.5) as u8;
    let [r, g, b] = rgb;
    (to8(r), to8(g), to8(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_llvm_xray_prints() {
        // From `llvm-xray graph -c count -b 90p` and `graph-diff -c sum` on the demo traces.
        let s = Scale::SEQUENTIAL;
        assert_eq!(s.color(1.0), "#7F0000");
        assert_eq!(s.color(0.0), "#FFF7EC");
        assert_eq!(s.color(2.0), "#7F0000");
        let d = Scale::DIVERGING;
        assert_eq!(d.color(2.0), "#00FF00");
        assert_eq!(d.color(-2.0), "#FF0000");
        assert_eq!(d.color(0.0), "#F7F7F7");
        assert_eq!(s.color(f64::NAN), "#FFF7EC");
    }
}
