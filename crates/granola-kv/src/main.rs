//! `granola-kv` binary (filled in once the server lands).
fn main() {}
