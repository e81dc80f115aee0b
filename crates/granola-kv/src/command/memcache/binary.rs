//! The binary protocol's commands. Semantics (counters, limits, the store
//! calls) are the text commands' own `apply` functions; this file maps
//! their outcomes to binary statuses and responses.
//!
//! Quiet variants send no success response (for gets: no miss); errors
//! always go out. Responses are composed straight into the connection's
//! queue, so a quiet run is flushed by the next non-quiet command (`noop`)
//! together with everything before it. Stored values at or above the copy
//! threshold go out by reference, as with the text protocol.

use super::{arith, delete, flush, stats, store, string_item, Ctx, VERSION};
use crate::command::Step;
use crate::protocol::memcache::binary::{self as bin, status, Opcode, Request};
use crate::protocol::memcache::{Store, StoreMode, Tokens};
use crate::store::{Item, StoreError};
use std::sync::atomic::Ordering;

/// Expiration of an incr/decr that must not create a missing key.
const NO_CREATE: u32 = 0xffff_ffff;

/// Runs one binary request; a write tells client tracking of its key
/// afterwards (as the text protocol's do, see [`super::dispatch`]).
pub fn execute(ctx: &mut Ctx<'_>, req: &Request<'_>) -> Step {
    let step = run(ctx, req);
    let tracker = &ctx.shared.tracker;
    match req.opcode {
        Opcode::Gat
        | Opcode::Touch
        | Opcode::Set
        | Opcode::Add
        | Opcode::Replace
        | Opcode::Append
        | Opcode::Prepend
        | Opcode::Delete
        | Opcode::Increment
        | Opcode::Decrement => tracker.changed(req.key, None),
        Opcode::Flush => tracker.flushed(),
        _ => {}
    }
    step
}

fn run(ctx: &mut Ctx<'_>, req: &Request<'_>) -> Step {
    match req.opcode {
        Opcode::Get => {
            bump_get(ctx);
            let item = string_item(ctx.db.get(req.key));
            write_item(ctx, req, item);
        }
        Opcode::Gat => {
            bump_get(ctx);
            let item = super::touch::apply(ctx, req.key, req.extra_u32(0) as i32);
            write_item(ctx, req, string_item(item));
        }
        Opcode::Touch => {
            match super::touch::apply(ctx, req.key, req.extra_u32(0) as i32) {
                // The item's flags, as memcached answers a touch.
                Some(item) => bin::write_response(
                    ctx.out,
                    req,
                    status::OK,
                    item.cas(),
                    &item.flags().to_be_bytes(),
                    &[],
                    &[],
                ),
                None => error(ctx, req, status::KEY_NOT_FOUND),
            };
        }
        Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend => {
            store_value(ctx, req)
        }
        Opcode::Delete => {
            match cas_check(ctx, req) {
                Err(s) => error(ctx, req, s),
                Ok(()) if delete::apply(ctx, req.key) => success(ctx, req, 0, &[]),
                Ok(()) => error(ctx, req, status::KEY_NOT_FOUND),
            };
        }
        Opcode::Increment | Opcode::Decrement => arith(ctx, req),
        Opcode::Quit => {
            success(ctx, req, 0, &[]);
            return Step::Close(Box::default());
        }
        Opcode::Flush => {
            flush::execute(ctx, req.extra_u32(0) as i32, true);
            success(ctx, req, 0, &[]);
        }
        Opcode::Noop | Opcode::Verbosity => success(ctx, req, 0, &[]),
        Opcode::Version => success(ctx, req, 0, VERSION),
        Opcode::Stat => stat(ctx, req),
    }
    Step::Done
}

fn bump_get(ctx: &Ctx<'_>) {
    ctx.shared.memcache.cmd_get.fetch_add(1, Ordering::Relaxed);
}

/// A success response (none for a quiet command).
fn success(ctx: &mut Ctx<'_>, req: &Request<'_>, cas: u64, value: &[u8]) {
    if !req.quiet {
        bin::write_response(ctx.out, req, status::OK, cas, &[], &[], value);
    }
}

fn error(ctx: &mut Ctx<'_>, req: &Request<'_>, status: u16) {
    bin::write_error(ctx.out, req.raw_opcode, status, req.opaque);
}

/// A get/gat hit: flags, the key if asked, the value (by reference when
/// large). A miss: `Key not found`, silent when quiet.
fn write_item(ctx: &mut Ctx<'_>, req: &Request<'_>, item: Option<Item>) {
    let key: &[u8] = if req.with_key { req.key } else { &[] };
    match item {
        Some(item) => {
            let value = item.value();
            bin::write_header(
                ctx.out,
                req.raw_opcode,
                status::OK,
                req.opaque,
                item.cas(),
                &item.flags().to_be_bytes(),
                key,
                value.len(),
            );
            ctx.out.value(&value);
        }
        None if req.quiet => {}
        None if req.with_key => {
            bin::write_response(ctx.out, req, status::KEY_NOT_FOUND, 0, &[], key, &[])
        }
        None => error(ctx, req, status::KEY_NOT_FOUND),
    }
}

/// A request's CAS against the item's (nothing to check when 0); not
/// atomic with the change that follows, as for the meta commands' `C`.
fn cas_check(ctx: &Ctx<'_>, req: &Request<'_>) -> Result<(), u16> {
    if req.cas == 0 {
        return Ok(());
    }
    match string_item(ctx.db.get(req.key)) {
        None => Err(status::KEY_NOT_FOUND),
        Some(item) if item.cas() != req.cas => Err(status::KEY_EXISTS),
        Some(_) => Ok(()),
    }
}

fn store_status(mode: StoreMode, e: StoreError) -> u16 {
    match (e, mode) {
        (StoreError::NotStored, StoreMode::Add) | (StoreError::Exists, _) => status::KEY_EXISTS,
        (StoreError::NotStored, StoreMode::Replace) | (StoreError::NotFound, _) => {
            status::KEY_NOT_FOUND
        }
        (StoreError::NotStored | StoreError::WrongType, _) => status::NOT_STORED,
        (StoreError::TooLarge | StoreError::ListTooLong, _) => status::TOO_LARGE,
        (StoreError::NotNumeric, _) => status::NON_NUMERIC,
        (StoreError::OutOfMemory, _) => status::OUT_OF_MEMORY,
    }
}

fn store_value(ctx: &mut Ctx<'_>, req: &Request<'_>) {
    let (mut mode, flags, exptime) = match req.opcode {
        Opcode::Set => (StoreMode::Set, req.extra_u32(0), req.extra_u32(4) as i32),
        Opcode::Add => (StoreMode::Add, req.extra_u32(0), req.extra_u32(4) as i32),
        Opcode::Replace => (
            StoreMode::Replace,
            req.extra_u32(0),
            req.extra_u32(4) as i32,
        ),
        Opcode::Append => (StoreMode::Append, 0, 0),
        _ => (StoreMode::Prepend, 0, 0),
    };
    if req.value.len() > ctx.shared.config.max_item_size {
        // As for the text protocol: a refused set removes the old value.
        ctx.db.delete(req.key);
        super::bump(&ctx.shared.memcache.store_too_large);
        return error(ctx, req, status::TOO_LARGE);
    }
    if req.cas != 0 {
        match mode {
            // Any CAS makes set, add and replace a compare-and-swap, as
            // in memcached (an add of a missing key is then "Not found").
            StoreMode::Set | StoreMode::Add | StoreMode::Replace => mode = StoreMode::Cas,
            StoreMode::Append | StoreMode::Prepend => {
                if let Err(s) = cas_check(ctx, req) {
                    return error(ctx, req, s);
                }
            }
            _ => {}
        }
    }
    let s = Store {
        mode,
        key: req.key,
        flags,
        exptime,
        data: req.value,
        cas: Some(req.cas),
        noreply: req.quiet,
    };
    match store::apply(ctx, &s) {
        Ok(cas) => success(ctx, req, cas, &[]),
        Err(e) => error(ctx, req, store_status(mode, e)),
    }
}

/// incr/decr: extras are delta, initial value, expiration. A missing key
/// is created with the initial value unless the expiration is all ones.
fn arith(ctx: &mut Ctx<'_>, req: &Request<'_>) {
    let decr = req.opcode == Opcode::Decrement;
    let (delta, initial, exptime) = (req.extra_u64(0), req.extra_u64(8), req.extra_u32(16));
    if let Err(s) = cas_check(ctx, req) {
        return error(ctx, req, s);
    }
    let mut r = arith::apply(ctx, req.key, decr, delta);
    if matches!(r, Err(StoreError::NotFound)) && exptime != NO_CREATE {
        let digits = initial.to_string();
        let s = Store {
            mode: StoreMode::Add,
            key: req.key,
            flags: 0,
            exptime: exptime as i32,
            data: digits.as_bytes(),
            cas: None,
            noreply: true,
        };
        r = match store::apply(ctx, &s) {
            Ok(_) => Ok(initial),
            // Created meanwhile by another connection: apply to that.
            Err(StoreError::NotStored) => arith::apply(ctx, req.key, decr, delta),
            Err(e) => Err(e),
        };
    }
    match r {
        Ok(n) => {
            if !req.quiet {
                let cas = ctx.db.get(req.key).map_or(0, |i| i.cas());
                bin::write_response(ctx.out, req, status::OK, cas, &[], &[], &n.to_be_bytes());
            }
        }
        Err(StoreError::WrongType) => error(ctx, req, status::KEY_NOT_FOUND),
        Err(e) => error(ctx, req, store_status(StoreMode::Set, e)),
    }
}

/// `stat [group]`: the text `stats` output, one response per `STAT` line
/// (key = name, value = value), then an empty response; an unknown group
/// is `Key not found`.
fn stat(ctx: &mut Ctx<'_>, req: &Request<'_>) {
    let mut text = Vec::new();
    let mut sub = Ctx {
        shared: ctx.shared,
        db: ctx.db,
        out: &mut text,
        resume: 0,
    };
    stats::execute(&mut sub, Tokens::new(req.key));
    if text.starts_with(b"ERROR") || text.starts_with(b"CLIENT_ERROR") {
        return error(ctx, req, status::KEY_NOT_FOUND);
    }
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(stat) = line.strip_prefix(b"STAT ") else {
            continue;
        };
        let (name, value) = match stat.iter().position(|&b| b == b' ') {
            Some(i) => (&stat[..i], &stat[i + 1..]),
            None => (stat, &[][..]),
        };
        bin::write_response(ctx.out, req, status::OK, 0, &[], name, value);
    }
    bin::write_response(ctx.out, req, status::OK, 0, &[], &[], &[]);
}
