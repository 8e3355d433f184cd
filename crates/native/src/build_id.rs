//! Build ids (`NT_GNU_BUILD_ID`).

use std::fmt;

/// A build id: the bytes of an ELF file's `NT_GNU_BUILD_ID` note (20 bytes for SHA-1, 16
/// for MD5/UUID, or any length a linker was told to use).
///
/// perf.data stores build ids in 20-byte fields; older perf (no size field) pads shorter
/// ids with zeros, so [`BuildId::matches`] accepts a zero-padded form of the same id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BuildId(Box<[u8]>);

impl BuildId {
    /// A build id from its bytes.
    pub fn new(bytes: &[u8]) -> BuildId {
        BuildId(bytes.into())
    }

    /// Parses lower- or upper-case hex (`None` for odd lengths, other characters or "").
    pub fn from_hex(hex: &str) -> Option<BuildId> {
        let hex = hex.as_bytes();
        if hex.is_empty() || !hex.len().is_multiple_of(2) {
            return None;
        }
        let nibble = |c: u8| -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                b'A'..=b'F' => Some(c - b'A' + 10),
                _ => None,
            }
        };
        let bytes = hex
            .chunks_exact(2)
            .map(|p| match p {
                [h, l] => Some(nibble(*h)? << 4 | nibble(*l)?),
                _ => None,
            })
            .collect::<Option<Vec<u8>>>()?;
        Some(BuildId(bytes.into()))
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Lower-case hex, as perf and the `.build-id` directories spell it.
    pub fn to_hex(&self) -> String {
        let digit = |n: u8| char::from_digit(u32::from(n), 16).unwrap_or('0');
        let mut s = String::with_capacity(self.0.len() * 2);
        for b in self.0.iter() {
            s.push(digit(b >> 4));
            s.push(digit(b & 15));
        }
        s
    }

    /// Whether two ids name the same file: equal, or equal once trailing zero padding (perf's
    /// fixed 20-byte field) is ignored on the longer one. An all-zero id matches nothing.
    pub fn matches(&self, other: &BuildId) -> bool {
        let (a, b) = (self.trimmed(), other.trimmed());
        !a.is_empty() && a == b
    }

    fn trimmed(&self) -> &[u8] {
        let end = self.0.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        self.0.get(..end).unwrap_or(&[])
    }

    /// The `xx/rest` split of the hex form used by `.build-id` directories
    /// (`None` for ids shorter than 2 bytes).
    pub fn split_hex(&self) -> Option<(String, String)> {
        let hex = self.to_hex();
        if hex.len() < 4 {
            return None;
        }
        let (a, b) = hex.split_at(2);
        Some((a.to_string(), b.to_string()))
    }
}

impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuildId({})", self.to_hex())
    }
}

/// The build id in a buffer of ELF notes (the format of `/sys/kernel/notes` and of
/// `SHT_NOTE` sections, native endian, 4-byte aligned): the descriptor of the first
/// `NT_GNU_BUILD_ID` note owned by "GNU".
pub fn build_id_from_notes(notes: &[u8]) -> Option<BuildId> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let mut rest = notes;
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        let s = b.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes(s.try_into().ok()?))
    };
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    while rest.len() >= 12 {
        let namesz = usize::try_from(u32_at(rest, 0)?).ok()?;
        let descsz = usize::try_from(u32_at(rest, 4)?).ok()?;
        let kind = u32_at(rest, 8)?;
        let name_end = 12usize.checked_add(namesz)?;
        let desc_start = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = desc_start.checked_add(descsz)?;
        let name = rest.get(12..name_end)?;
        let desc = rest.get(desc_start..desc_end)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(BuildId::new(desc));
        }
        rest = rest.get(desc_start.checked_add(align4(descsz)?)?..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_padding() {
        let id = BuildId::from_hex("93AC61ec5a8eb1396f9fbd350e3169a558528a40").unwrap();
        assert_eq!(id.to_hex(), "93ac61ec5a8eb1396f9fbd350e3169a558528a40");
        assert_eq!(
            id.split_hex().unwrap(),
            ("93".into(), "ac61ec5a8eb1396f9fbd350e3169a558528a40".into())
        );
        let md5 = BuildId::new(&[1; 16]);
        let mut padded = vec![1; 16];
        padded.extend([0; 4]);
        assert!(md5.matches(&BuildId::new(&padded)));
        assert!(!md5.matches(&id));
        assert!(!BuildId::new(&[0; 20]).matches(&BuildId::new(&[0; 20])));
        assert!(BuildId::from_hex("abc").is_none());
        assert!(BuildId::from_hex("zz").is_none());
    }

    #[test]
    fn notes() {
        let mut n = Vec::new();
        // An unrelated note first, then the build id.
        n.extend(4u32.to_ne_bytes());
        n.extend(2u32.to_ne_bytes());
        n.extend(1u32.to_ne_bytes());
        n.extend(b"Xen\0\x01\x02\0\0");
        n.extend(4u32.to_ne_bytes());
        n.extend(3u32.to_ne_bytes());
        n.extend(3u32.to_ne_bytes());
        n.extend(b"GNU\0\xaa\xbb\xcc\0");
        assert_eq!(build_id_from_notes(&n).unwrap().to_hex(), "aabbcc");
        for cut in 0..n.len() {
            let _ = build_id_from_notes(&n[..cut]);
        }
    }
}
