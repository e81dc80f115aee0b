//! Geospatial indexes: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS and GEORADIUSBYMEMBER (and their `_RO`
//! forms). As in Redis, a geo set is a sorted set whose scores are 52-bit
//! geohashes (26 bits of longitude interleaved with 26 of latitude, over
//! the Web Mercator latitude range), positions are the centres of those
//! cells, and distances are haversine distances on a sphere of radius
//! 6,372,797.560856 m, so positions, distances and geohash strings are
//! Redis's to the last printed digit.
//!
//! A search reads only the cells that cover the shape's bounding box (at
//! most 16 score ranges of the sorted set, at the finest step that keeps
//! them few) and then checks each member's exact distance. Results are
//! ordered by distance when asked (ASC, DESC, or COUNT without ANY, as in
//! Redis); otherwise by distance as well, where Redis leaves the order to
//! its cell scan. One difference: around a centre at exactly ±180°
//! longitude Redis's cell arithmetic misses the members across the
//! antimeridian; granola-kv finds them.

use super::collections::{edit, growth_of, read, CType};
use super::strings::parse_float;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Kind, Meta};
use std::ops::Bound;

const T: CType = CType::ZSet;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

const LAT_MIN: f64 = -85.051_128_78;
const LAT_MAX: f64 = 85.051_128_78;
const LON_MIN: f64 = -180.0;
const LON_MAX: f64 = 180.0;
const STEP: u32 = 26;
const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// Spreads the 32 bits of `x` to the even bit positions of a u64.
fn spread(x: u32) -> u64 {
    let mut x = u64::from(x);
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF;
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & 0x5555_5555_5555_5555
}

/// The even bit positions of `x`, packed.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x >> 4) & 0x00FF_00FF_00FF_00FF;
    x = (x | x >> 8) & 0x0000_FFFF_0000_FFFF;
    (x | x >> 16) as u32
}

/// A cell's index along one axis at `step` bits (`max` itself gives
/// `2^step`, one past the last cell, as in Redis).
fn cell_index(v: f64, min: f64, max: f64, step: u32) -> u32 {
    ((v - min) / (max - min) * (1u64 << step) as f64) as u64 as u32
}

/// The geohash of a position (latitude bits at even positions).
fn encode(lon: f64, lat: f64, lat_min: f64, lat_max: f64) -> u64 {
    let la = cell_index(lat, lat_min, lat_max, STEP);
    let lo = cell_index(lon, LON_MIN, LON_MAX, STEP);
    spread(la) | spread(lo) << 1
}

/// The centre of a 52-bit geohash's cell, clamped to the valid ranges.
fn decode(bits: u64) -> (f64, f64) {
    let (la, lo) = (squash(bits), squash(bits >> 1));
    let scale = (1u64 << STEP) as f64;
    let lat_lo = LAT_MIN + (f64::from(la) / scale) * (LAT_MAX - LAT_MIN);
    let lat_hi = LAT_MIN + ((f64::from(la) + 1.0) / scale) * (LAT_MAX - LAT_MIN);
    let lon_lo = LON_MIN + (f64::from(lo) / scale) * (LON_MAX - LON_MIN);
    let lon_hi = LON_MIN + ((f64::from(lo) + 1.0) / scale) * (LON_MAX - LON_MIN);
    let lon = ((lon_lo + lon_hi) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((lat_lo + lat_hi) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

fn deg_rad(d: f64) -> f64 {
    d * (std::f64::consts::PI / 180.0)
}

fn rad_deg(r: f64) -> f64 {
    r / (std::f64::consts::PI / 180.0)
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Haversine distance in meters, as Redis computes it.
fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (deg_rad(lon1), deg_rad(lon2));
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// Meters per `unit`; `None` (error written) for an unknown one.
fn unit(ctx: &mut Ctx<'_>, u: &[u8]) -> Option<f64> {
    match &u.to_ascii_lowercase()[..] {
        b"m" => Some(1.0),
        b"km" => Some(1000.0),
        b"ft" => Some(0.3048),
        b"mi" => Some(1609.34),
        _ => {
            ctx.error(b"ERR unsupported unit provided. please use M, KM, FT, MI");
            None
        }
    }
}

/// A coordinate as Redis prints it (`%.17Lf`, trailing zeros cut): a
/// bulk string in RESP2, that text as a RESP3 double.
fn coordinate(ctx: &mut Ctx<'_>, v: f64) {
    let s = format!("{v:.17}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    ctx.double_text(s);
}

/// A distance as Redis prints it: `%.4f` in a bulk string, in RESP3 too.
fn dist_reply(ctx: &mut Ctx<'_>, d: f64) {
    ctx.bytes(format!("{d:.4}").as_bytes());
}

/// A longitude, latitude pair from two arguments; `None` (error written)
/// if either is not a float or out of range.
fn lon_lat(ctx: &mut Ctx<'_>, lon: &[u8], lat: &[u8]) -> Option<(f64, f64)> {
    let (Some(lon), Some(lat)) = (parse_float(lon), parse_float(lat)) else {
        ctx.error(b"ERR value is not a valid float");
        return None;
    };
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        ctx.error(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}").as_bytes());
        return None;
    }
    Some((lon, lat))
}

fn score_bits(z: &Dict, member: &[u8]) -> Option<u64> {
    z.score(member).map(|s| s as u64)
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`.
pub fn geoadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut i = 2;
    while i < cmd.len() {
        match &arg(cmd, i).to_ascii_uppercase()[..] {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"CH" => ch = true,
            _ => break,
        }
        i += 1;
    }
    let rest: Vec<&[u8]> = cmd.args().skip(i).collect();
    if rest.is_empty() || rest.len() % 3 != 0 {
        ctx.error(b"ERR syntax error. Try GEOADD key [x1] [y1] [name1] [x2] [y2] [name2] ... ");
        return Step::Done;
    }
    if nx && xx {
        ctx.error(b"ERR XX and NX options at the same time are not compatible");
        return Step::Done;
    }
    let mut adds = Vec::with_capacity(rest.len() / 3);
    for t in rest.chunks(3) {
        let Some((lon, lat)) = lon_lat(ctx, t[0], t[1]) else {
            return Step::Done;
        };
        adds.push((t[2], encode(lon, lat, LAT_MIN, LAT_MAX) as f64));
    }
    let growth = growth_of(adds.len(), adds.iter().map(|(m, _)| *m));
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, growth, |z| {
        let (mut added, mut changed) = (0i64, 0i64);
        for &(m, s) in &adds {
            match z.score(m) {
                None if !xx => {
                    z.set_score(m, s);
                    added += 1;
                }
                Some(old) if !nx && old != s => {
                    z.set_score(m, s);
                    changed += 1;
                }
                _ => {}
            }
        }
        if ch {
            added + changed
        } else {
            added
        }
    }) {
        ctx.int(n);
    }
    Step::Done
}

/// `GEOPOS key member [member ...]`.
pub fn geopos(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        ctx.array(cmd.len() - 2);
        for m in cmd.args().skip(2) {
            match z.and_then(|z| score_bits(z, m)) {
                Some(bits) => {
                    let (lon, lat) = decode(bits);
                    ctx.array(2);
                    coordinate(ctx, lon);
                    coordinate(ctx, lat);
                }
                None => ctx.null_array(),
            }
        }
    });
    Step::Done
}

/// `GEODIST key member1 member2 [M|KM|FT|MI]`.
pub fn geodist(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let per = match cmd.len() {
        4 => 1.0,
        5 => match unit(ctx, arg(cmd, 4)) {
            Some(u) => u,
            None => return Step::Done,
        },
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        let pair = z.and_then(|z| Some((score_bits(z, arg(cmd, 2))?, score_bits(z, arg(cmd, 3))?)));
        match pair {
            Some((a, b)) => {
                let ((lon1, lat1), (lon2, lat2)) = (decode(a), decode(b));
                dist_reply(ctx, distance(lon1, lat1, lon2, lat2) / per);
            }
            None => ctx.null(),
        }
    });
    Step::Done
}

/// `GEOHASH key member [member ...]`: 11-character standard geohashes.
pub fn geohash(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        ctx.array(cmd.len() - 2);
        for m in cmd.args().skip(2) {
            match z.and_then(|z| score_bits(z, m)) {
                Some(bits) => {
                    let (lon, lat) = decode(bits);
                    // The standard geohash: latitude over -90..90.
                    let h = encode(lon, lat, -90.0, 90.0);
                    let text: Vec<u8> = (0..11)
                        .map(|i| match i {
                            // 52 bits make 10 characters and 2 bits; the
                            // 11th is 0, as Redis prints it.
                            10 => ALPHABET[0],
                            _ => ALPHABET[((h >> (52 - (i + 1) * 5)) & 0x1f) as usize],
                        })
                        .collect();
                    ctx.bytes(&text);
                }
                None => ctx.null(),
            }
        }
    });
    Step::Done
}

/// Where a search starts and what it covers.
#[derive(Clone, Copy)]
enum Shape {
    /// Radius in meters.
    Radius(f64),
    /// Width and height in meters.
    Box(f64, f64),
}

#[derive(Clone, Copy, PartialEq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search.
struct Search<'a> {
    from_member: Option<&'a [u8]>,
    from: Option<(f64, f64)>,
    shape: Option<Shape>,
    /// Meters per unit of the shape (and of WITHDIST).
    per: f64,
    sort: Sort,
    count: Option<usize>,
    any: bool,
    with_coord: bool,
    with_dist: bool,
    with_hash: bool,
    store: Option<&'a [u8]>,
    store_dist: bool,
}

/// Which command a search came from: their arguments differ.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// GEOSEARCH (`store` for GEOSEARCHSTORE).
    Search { store: bool },
    /// GEORADIUS: longitude latitude radius unit.
    Radius { read_only: bool },
    /// GEORADIUSBYMEMBER: member radius unit.
    ByMember { read_only: bool },
}

impl<'a> Search<'a> {
    fn parse(ctx: &mut Ctx<'_>, cmd: &Command<'a>, form: Form) -> Option<Search<'a>> {
        let mut s = Search {
            from_member: None,
            from: None,
            shape: None,
            per: 1.0,
            sort: Sort::None,
            count: None,
            any: false,
            with_coord: false,
            with_dist: false,
            with_hash: false,
            store: None,
            store_dist: false,
        };
        let mut i = match form {
            Form::Search { store: true } => 3,
            Form::Search { store: false } => 2,
            Form::Radius { .. } => {
                s.from = Some(lon_lat(ctx, arg(cmd, 2), arg(cmd, 3))?);
                s.shape = Some(Shape::Radius(radius(ctx, arg(cmd, 4))?));
                s.per = unit(ctx, arg(cmd, 5))?;
                6
            }
            Form::ByMember { .. } => {
                s.from_member = Some(arg(cmd, 2));
                s.shape = Some(Shape::Radius(radius(ctx, arg(cmd, 3))?));
                s.per = unit(ctx, arg(cmd, 4))?;
                5
            }
        };
        let search = matches!(form, Form::Search { .. });
        let read_only = matches!(
            form,
            Form::Radius { read_only: true } | Form::ByMember { read_only: true }
        );
        while i < cmd.len() {
            let left = cmd.len() - i - 1;
            match &arg(cmd, i).to_ascii_uppercase()[..] {
                b"WITHCOORD" => s.with_coord = true,
                b"WITHDIST" => s.with_dist = true,
                b"WITHHASH" => s.with_hash = true,
                b"ANY" => s.any = true,
                b"ASC" => s.sort = Sort::Asc,
                b"DESC" => s.sort = Sort::Desc,
                b"COUNT" if left >= 1 => {
                    match parse_i64(arg(cmd, i + 1)) {
                        Some(n) if n > 0 => s.count = Some(n as usize),
                        Some(_) => {
                            ctx.error(b"ERR COUNT must be > 0");
                            return None;
                        }
                        None => {
                            ctx.raw(resp::ERR_NOT_INTEGER);
                            return None;
                        }
                    }
                    i += 1;
                }
                b"STORE" | b"STOREDIST" if !search && !read_only && left >= 1 => {
                    s.store_dist = arg(cmd, i).eq_ignore_ascii_case(b"STOREDIST");
                    s.store = Some(arg(cmd, i + 1));
                    i += 1;
                }
                b"STOREDIST" if form == (Form::Search { store: true }) => s.store_dist = true,
                // A second FROM or BY is a syntax error, as in Redis.
                b"FROMMEMBER"
                    if search && left >= 1 && s.from.is_none() && s.from_member.is_none() =>
                {
                    s.from_member = Some(arg(cmd, i + 1));
                    i += 1;
                }
                b"FROMLONLAT"
                    if search && left >= 2 && s.from.is_none() && s.from_member.is_none() =>
                {
                    s.from = Some(lon_lat(ctx, arg(cmd, i + 1), arg(cmd, i + 2))?);
                    i += 2;
                }
                b"BYRADIUS" if search && left >= 2 && s.shape.is_none() => {
                    s.shape = Some(Shape::Radius(radius(ctx, arg(cmd, i + 1))?));
                    s.per = unit(ctx, arg(cmd, i + 2))?;
                    i += 2;
                }
                b"BYBOX" if search && left >= 3 && s.shape.is_none() => {
                    let (Some(w), Some(h)) =
                        (parse_float(arg(cmd, i + 1)), parse_float(arg(cmd, i + 2)))
                    else {
                        ctx.error(b"ERR need numeric width and height");
                        return None;
                    };
                    if w < 0.0 || h < 0.0 {
                        ctx.error(b"ERR height or width cannot be negative");
                        return None;
                    }
                    let per = unit(ctx, arg(cmd, i + 3))?;
                    s.per = per;
                    s.shape = Some(Shape::Box(w * per, h * per));
                    i += 3;
                }
                _ => {
                    ctx.raw(resp::ERR_SYNTAX);
                    return None;
                }
            }
            i += 1;
        }
        if search && s.from.is_none() && s.from_member.is_none() {
            ctx.error(
                b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
            );
            return None;
        }
        if search && s.shape.is_none() {
            ctx.error(b"ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH");
            return None;
        }
        if s.any && s.count.is_none() {
            ctx.error(b"ERR the ANY argument requires COUNT argument");
            return None;
        }
        let storing = s.store.is_some() || form == (Form::Search { store: true });
        if storing && (s.with_coord || s.with_dist || s.with_hash) {
            let name = String::from_utf8_lossy(cmd.name()).to_uppercase();
            ctx.error(
                format!("ERR STORE option in {name} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
                    .as_bytes(),
            );
            return None;
        }
        // A radius is in its unit until the unit is known.
        if let Some(Shape::Radius(r)) = s.shape {
            s.shape = Some(Shape::Radius(r * s.per));
        }
        if s.count.is_some() && !s.any && s.sort == Sort::None {
            s.sort = Sort::Asc;
        }
        Some(s)
    }
}

fn radius(ctx: &mut Ctx<'_>, r: &[u8]) -> Option<f64> {
    match parse_float(r) {
        Some(r) if r >= 0.0 => Some(r),
        Some(_) => {
            ctx.error(b"ERR radius cannot be negative");
            None
        }
        None => {
            ctx.error(b"ERR need numeric radius");
            None
        }
    }
}

/// One member found: its name, distance from the centre (meters), score.
struct Hit {
    member: Vec<u8>,
    dist: f64,
    bits: u64,
}

/// The score ranges (cells) covering the shape around `(lon, lat)`: the
/// cells of the finest step at which the shape's bounding box (a little
/// widened) spans at most 16.
fn cells(lon: f64, lat: f64, shape: Shape) -> Vec<(f64, f64)> {
    let (half_w, half_h) = match shape {
        Shape::Radius(r) => (r, r),
        Shape::Box(w, h) => (w / 2.0, h / 2.0),
    };
    let lat_d = rad_deg(half_h / EARTH_RADIUS_M) * 1.01 + 1e-9;
    let (lat_lo, lat_hi) = ((lat - lat_d).max(LAT_MIN), (lat + lat_d).min(LAT_MAX));
    // Longitude degrees per meter grow away from the equator: the box is
    // as wide as the shape at its latitude farthest from it.
    let widest = deg_rad(lat_lo.abs().max(lat_hi.abs())).cos();
    let lon_d = if widest < 1e-9 {
        180.0
    } else {
        (rad_deg(half_w / EARTH_RADIUS_M / widest) * 1.01 + 1e-9).min(180.0)
    };
    let mut step = STEP;
    loop {
        let n = 1i64 << step;
        let last = (n - 1) as u32;
        let la = (
            cell_index(lat_lo, LAT_MIN, LAT_MAX, step).min(last),
            cell_index(lat_hi, LAT_MIN, LAT_MAX, step).min(last),
        );
        let (lon_first, lon_count) = if lon_d >= 180.0 {
            (0, n)
        } else {
            // Unclamped: a box across the antimeridian wraps around.
            let idx = |v: f64| ((v - LON_MIN) / (LON_MAX - LON_MIN) * n as f64).floor() as i64;
            let first = idx(lon - lon_d);
            (first, (idx(lon + lon_d) - first + 1).min(n))
        };
        if i64::from(la.1 - la.0 + 1) * lon_count <= 16 || step == 1 {
            let shift = 2 * (STEP - step);
            let mut ranges = Vec::new();
            for lat_i in la.0..=la.1 {
                for k in 0..lon_count {
                    let lon_i = (lon_first + k).rem_euclid(n) as u32;
                    let h = spread(lat_i) | spread(lon_i) << 1;
                    ranges.push(((h << shift) as f64, ((h + 1) << shift) as f64));
                }
            }
            return ranges;
        }
        step -= 1;
    }
}

/// Members of `z` within `s`'s shape around its centre.
fn search(z: &Dict, lon: f64, lat: f64, s: &Search<'_>) -> Vec<Hit> {
    let shape = s.shape.expect("parsed");
    let mut hits = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (lo, hi) in cells(lon, lat, shape) {
        for (m, score) in z.by_score(Bound::Included(lo), Bound::Excluded(hi)) {
            if !seen.insert(m.bytes().to_vec()) {
                continue;
            }
            let bits = score as u64;
            let (mlon, mlat) = decode(bits);
            let dist = match shape {
                Shape::Radius(r) => {
                    let d = distance(lon, lat, mlon, mlat);
                    (d <= r).then_some(d)
                }
                Shape::Box(w, h) => (lat_distance(mlat, lat) <= h / 2.0
                    && distance(mlon, mlat, lon, mlat) <= w / 2.0)
                    .then(|| distance(lon, lat, mlon, mlat)),
            };
            if let Some(dist) = dist {
                hits.push(Hit {
                    member: m.bytes().to_vec(),
                    dist,
                    bits,
                });
            }
        }
    }
    hits
}

fn run_search(ctx: &mut Ctx<'_>, cmd: &Command<'_>, form: Form) -> Step {
    let Some(s) = Search::parse(ctx, cmd, form) else {
        return Step::Done;
    };
    let src = match form {
        Form::Search { store: true } => arg(cmd, 2),
        _ => arg(cmd, 1),
    };
    let Ok(found) = read(ctx, src, T, |_, z| {
        let Some(z) = z else {
            return Ok(Some(Vec::new()));
        };
        let (lon, lat) = match (s.from, s.from_member) {
            (Some(p), _) => p,
            (None, Some(m)) => match score_bits(z, m) {
                Some(bits) => decode(bits),
                None => return Err(()),
            },
            (None, None) => return Ok(None),
        };
        Ok(Some(search(z, lon, lat, &s)))
    }) else {
        return Step::Done;
    };
    let mut hits = match found {
        Ok(Some(h)) => h,
        Ok(None) => Vec::new(),
        Err(()) => {
            ctx.error(b"ERR could not decode requested zset member");
            return Step::Done;
        }
    };
    match s.sort {
        Sort::Desc => hits.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
        // Unsorted in Redis means in its cell-scan order; nearest first here.
        Sort::Asc | Sort::None => hits.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
    }
    if let Some(n) = s.count {
        hits.truncate(n);
    }
    let store_to = match form {
        Form::Search { store: true } => Some(arg(cmd, 1)),
        _ => s.store,
    };
    if let Some(dst) = store_to {
        let mut d = Dict::sorted();
        for h in &hits {
            let score = if s.store_dist {
                h.dist / s.per
            } else {
                h.bits as f64
            };
            d.set_score(&h.member, score);
        }
        let stored = if d.is_empty() {
            ctx.db.delete(dst);
            Ok(())
        } else {
            ctx.db.put_dict(dst, Kind::ZSet, &d, Meta::default())
        };
        match stored {
            Ok(()) => {
                // GEORADIUS's key positions name the source only.
                ctx.shared.waiters.touched(dst);
                ctx.int(hits.len() as i64);
            }
            Err(e) => ctx.store_error(e),
        }
        return Step::Done;
    }
    ctx.array(hits.len());
    let extra = usize::from(s.with_dist) + usize::from(s.with_hash) + usize::from(s.with_coord);
    for h in &hits {
        if extra == 0 {
            ctx.bytes(&h.member);
            continue;
        }
        ctx.array(1 + extra);
        ctx.bytes(&h.member);
        if s.with_dist {
            dist_reply(ctx, h.dist / s.per);
        }
        if s.with_hash {
            ctx.int(h.bits as i64);
        }
        if s.with_coord {
            let (lon, lat) = decode(h.bits);
            ctx.array(2);
            coordinate(ctx, lon);
            coordinate(ctx, lat);
        }
    }
    Step::Done
}

/// `GEOSEARCH key FROMMEMBER m | FROMLONLAT lon lat BYRADIUS r unit |
/// BYBOX w h unit [ASC|DESC] [COUNT n [ANY]] [WITHCOORD] [WITHDIST]
/// [WITHHASH]`.
pub fn geosearch(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::Search { store: false })
}

/// `GEOSEARCHSTORE dst src ... [STOREDIST]`.
pub fn geosearchstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::Search { store: true })
}

/// `GEORADIUS key lon lat radius unit [...] [STORE key] [STOREDIST key]`.
pub fn georadius(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::Radius { read_only: false })
}

/// `GEORADIUS_RO`: GEORADIUS without STORE.
pub fn georadius_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::Radius { read_only: true })
}

/// `GEORADIUSBYMEMBER key member radius unit [...]`.
pub fn georadiusbymember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::ByMember { read_only: false })
}

/// `GEORADIUSBYMEMBER_RO`.
pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_search(ctx, cmd, Form::ByMember { read_only: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for x in [0u32, 1, 0x3ff_ffff, 0x155_5555, 12345] {
            assert_eq!(squash(spread(x)), x);
            assert_eq!(squash(spread(x) << 1 >> 1), x);
        }
    }

    #[test]
    fn decode_is_the_cell_centre() {
        let bits = encode(13.361389, 38.115556, LAT_MIN, LAT_MAX);
        let (lon, lat) = decode(bits);
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(encode(lon, lat, LAT_MIN, LAT_MAX), bits);
    }
}
