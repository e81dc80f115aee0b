//! `COMMAND DOCS`: Redis 7's documentation of each command and
//! subcommand (`table/docs.rs`, generated from Redis 7.0.15), with the
//! subcommands granola-kv serves. The entries are kept as RESP3 values,
//! so maps, sets and arrays answer in RESP2 as Redis's do.

use super::table::{self, Spec};
use super::Ctx;

/// One value of a documentation entry, as Redis replies it.
pub enum Doc {
    /// A bulk string.
    B(&'static str),
    /// A simple string.
    S(&'static str),
    /// An integer.
    I(i64),
    /// An array.
    A(&'static [Doc]),
    /// A set (an array in RESP2).
    Set(&'static [Doc]),
    /// A map, keys and values in turn (a flat array in RESP2).
    M(&'static [Doc]),
}

fn write(ctx: &mut Ctx<'_>, d: &Doc) {
    let items = match d {
        Doc::B(s) => return ctx.bytes(s.as_bytes()),
        Doc::S(s) => return ctx.simple(s.as_bytes()),
        Doc::I(n) => return ctx.int(*n),
        Doc::A(items) => {
            ctx.array(items.len());
            items
        }
        Doc::Set(items) => {
            ctx.set(items.len());
            items
        }
        Doc::M(items) => {
            ctx.map(items.len() / 2);
            items
        }
    };
    for item in *items {
        write(ctx, item);
    }
}

/// Redis's entry for `name` (`container|sub` for a subcommand): its
/// fields, keys and values in turn.
fn of(name: &str) -> Option<&'static [Doc]> {
    let all = table::DOCS;
    let i = all.binary_search_by(|(n, _)| (*n).cmp(name)).ok()?;
    match &all[i].1 {
        Doc::M(fields) => Some(fields),
        _ => None,
    }
}

/// One `COMMAND DOCS` entry's value: Redis's documentation of `spec`
/// (only its group for a command Redis 7.0 lacks), then the subcommands
/// granola-kv serves, as Redis lists them last.
pub fn write_entry(ctx: &mut Ctx<'_>, spec: &Spec) {
    let subs = usize::from(!spec.subs.is_empty());
    match of(spec.name) {
        Some(fields) => {
            ctx.map(fields.len() / 2 + subs);
            for f in fields {
                write(ctx, f);
            }
        }
        None => {
            ctx.map(1 + subs);
            ctx.bytes(b"group");
            ctx.bytes(spec.group.as_bytes());
        }
    }
    if !spec.subs.is_empty() {
        ctx.bytes(b"subcommands");
        ctx.map(spec.subs.len());
        for sub in spec.subs {
            ctx.bytes(sub.name.as_bytes());
            write_entry(ctx, sub);
        }
    }
}
