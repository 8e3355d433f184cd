//! Writes the hand-made jitdump fixtures to `tests/fixtures/jitdump/handmade/`:
//! `cargo run -p profkit-jitdump --example make_fixtures [DIR]`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../tests/support/handmade.rs"]
mod handmade;

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/jitdump/handmade")
        });
    std::fs::create_dir_all(&dir)?;
    let mut readme = String::from(
        "# Hand-made jitdumps\n\nWritten by profkit's own writer for what no producer on our machines writes.\n\
         Regenerate with `cargo run -p profkit-jitdump --example make_fixtures` (deterministic; the tests check the\n\
         committed bytes are identical). Source: `crates/jitdump/tests/support/handmade.rs`.\n\n\
         | file | what | validator codes |\n|---|---|---|\n",
    );
    for h in handmade::all() {
        std::fs::write(dir.join(h.name), &h.bytes)?;
        readme.push_str(&format!(
            "| `{}` | {} | {} |\n",
            h.name,
            h.about,
            if h.codes.is_empty() {
                "none".to_string()
            } else {
                h.codes.join(", ")
            }
        ));
        println!("{} ({} bytes)", h.name, h.bytes.len());
    }
    std::fs::write(dir.join("README.md"), readme)?;
    Ok(())
}
