//! Streams in RDB: the stream types' layout (15, 19 and 21), written by
//! [`StreamDump`] and read back into an [`RdbStream`] with the same
//! checks as every other value (see the parent module's limits).

use super::listpack::{lp_int, lp_str, Listpack, LP_COUNT_UNKNOWN};
use super::*;
use crate::store::{StreamId, StreamMeta};

/// A decoded stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RdbStream {
    /// Its entries in ID order, each its fields and values (field, value,
    /// field, value, ...).
    pub entries: Vec<(StreamId, Vec<Vec<u8>>)>,
    /// Its last ID, max-deleted ID and entries-added count.
    pub meta: StreamMeta,
    /// Its consumer groups.
    pub groups: Vec<RdbGroup>,
}

/// A stream's consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbGroup {
    /// Its name.
    pub name: Vec<u8>,
    /// The last ID delivered.
    pub last_delivered: StreamId,
    /// Entries read, when known.
    pub entries_read: Option<u64>,
    /// Its pending entries, in ID order.
    pub pending: Vec<RdbPending>,
    /// Its consumers.
    pub consumers: Vec<RdbConsumer>,
}

/// A delivered, unacknowledged entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdbPending {
    /// The entry's ID.
    pub id: StreamId,
    /// When it was last delivered (Unix ms).
    pub delivered_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
    /// Its owner: an index into the group's consumers.
    pub consumer: usize,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbConsumer {
    /// Its name.
    pub name: Vec<u8>,
    /// Its last attempted interaction (Unix ms).
    pub seen_ms: u64,
    /// Its last successful interaction, if any.
    pub active_ms: Option<u64>,
}

/// Entry flags in a stream node: deleted (kept in place until the node
/// goes), and fields the same as the node's first entry's (only the
/// values are written).
const ENTRY_DELETED: i64 = 1;
const ENTRY_SAMEFIELDS: i64 = 2;

/// A node is closed once it holds this many bytes or entries (Redis's
/// default `stream-node-max-bytes` and `stream-node-max-entries`).
const NODE_MAX_BYTES: usize = 4096;
const NODE_MAX_ENTRIES: u64 = 100;

/// Builds a stream's payload: [`StreamDump::entry`] for each entry in ID
/// order, then [`StreamDump::finish`] with the stream's bookkeeping and
/// groups.
///
/// Each node is a key (its first entry's ID, 16 bytes big-endian) and a
/// listpack:
///
/// ```text
///   master: live-count | deleted-count | n | field_1 .. field_n | 0
///   entry:  flags | ms - master.ms | seq - master.seq
///           | (SAMEFIELDS: value_1 .. value_n | else: n | field | value ...)
///           | elements in the entry before this one
/// ```
#[derive(Default)]
pub struct StreamDump {
    /// The closed nodes, as they go in the payload.
    nodes: Vec<u8>,
    node_count: u64,
    open: Option<Node>,
    first: Option<StreamId>,
    len: u64,
}

/// The node being filled.
struct Node {
    master: StreamId,
    fields: Vec<Vec<u8>>,
    /// The entries' listpack elements.
    body: Vec<u8>,
    elements: usize,
    live: u64,
}

impl StreamDump {
    /// A stream with no entries yet.
    pub fn new() -> StreamDump {
        StreamDump::default()
    }

    /// The next entry: `id` above every earlier one, `parts` its fields
    /// and values (field, value, field, value, ...).
    pub fn entry(&mut self, id: StreamId, parts: &[&[u8]]) {
        let bytes: usize = parts.iter().map(|p| p.len()).sum();
        if let Some(n) = &self.open {
            if 7 + n.body.len() + bytes >= NODE_MAX_BYTES || n.live >= NODE_MAX_ENTRIES {
                self.close();
            }
        }
        let pairs = parts.len() / 2;
        let node = self.open.get_or_insert_with(|| Node {
            master: id,
            fields: parts
                .iter()
                .step_by(2)
                .take(pairs)
                .map(|f| f.to_vec())
                .collect(),
            body: Vec::new(),
            elements: 0,
            live: 0,
        });
        let same = node.fields.len() == pairs
            && node
                .fields
                .iter()
                .zip(parts.iter().step_by(2))
                .all(|(a, b)| a == b);
        let b = &mut node.body;
        lp_int(b, if same { ENTRY_SAMEFIELDS } else { 0 });
        lp_int(b, id.ms.wrapping_sub(node.master.ms) as i64);
        lp_int(b, id.seq.wrapping_sub(node.master.seq) as i64);
        let written = if same {
            for v in parts.iter().skip(1).step_by(2).take(pairs) {
                lp_str(b, v);
            }
            3 + pairs
        } else {
            lp_int(b, pairs as i64);
            for p in &parts[..pairs * 2] {
                lp_str(b, p);
            }
            4 + 2 * pairs
        };
        lp_int(b, written as i64);
        node.elements += written + 1;
        node.live += 1;
        self.first.get_or_insert(id);
        self.len += 1;
    }

    /// Writes the open node out.
    fn close(&mut self) {
        let Some(n) = self.open.take() else {
            return;
        };
        let mut lp = vec![0u8; 6];
        lp_int(&mut lp, n.live as i64);
        lp_int(&mut lp, 0);
        lp_int(&mut lp, n.fields.len() as i64);
        for f in &n.fields {
            lp_str(&mut lp, f);
        }
        lp_int(&mut lp, 0);
        lp.extend_from_slice(&n.body);
        lp.push(0xff);
        let total = u32::try_from(lp.len()).unwrap_or(u32::MAX);
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(n.elements + n.fields.len() + 4)
            .ok()
            .filter(|&c| c != LP_COUNT_UNKNOWN)
            .unwrap_or(LP_COUNT_UNKNOWN);
        lp[4..6].copy_from_slice(&count.to_le_bytes());
        put_len(&mut self.nodes, 16);
        self.nodes.extend_from_slice(&n.master.to_bytes());
        put_len(&mut self.nodes, lp.len() as u64);
        self.nodes.extend_from_slice(&lp);
        self.node_count += 1;
    }

    /// The payload: the entries given, then `meta` (the last ID at least
    /// the last entry's) and `groups`.
    pub fn finish(self, meta: &StreamMeta, groups: &[RdbGroup]) -> Vec<u8> {
        self.finish_as(TYPE_STREAM_LISTPACKS_2, meta, groups)
    }

    /// [`finish`](Self::finish) as stream type `t` (15, 19 or 21), under
    /// the oldest RDB version that has it.
    fn finish_as(mut self, t: u8, meta: &StreamMeta, groups: &[RdbGroup]) -> Vec<u8> {
        self.close();
        let mut out = vec![t];
        put_len(&mut out, self.node_count);
        out.append(&mut self.nodes);
        put_len(&mut out, self.len);
        put_id(&mut out, meta.last_id);
        if t >= TYPE_STREAM_LISTPACKS_2 {
            put_id(&mut out, self.first.unwrap_or(StreamId::MIN));
            put_id(&mut out, meta.max_deleted);
            put_len(&mut out, meta.entries_added);
        }
        put_len(&mut out, groups.len() as u64);
        for g in groups {
            put_len(&mut out, g.name.len() as u64);
            out.extend_from_slice(&g.name);
            put_id(&mut out, g.last_delivered);
            if t >= TYPE_STREAM_LISTPACKS_2 {
                // Unknown is -1 as an unsigned length.
                put_len(&mut out, g.entries_read.unwrap_or(u64::MAX));
            }
            put_len(&mut out, g.pending.len() as u64);
            for p in &g.pending {
                out.extend_from_slice(&p.id.to_bytes());
                out.extend_from_slice(&p.delivered_ms.to_le_bytes());
                put_len(&mut out, p.deliveries);
            }
            put_len(&mut out, g.consumers.len() as u64);
            for (i, c) in g.consumers.iter().enumerate() {
                put_len(&mut out, c.name.len() as u64);
                out.extend_from_slice(&c.name);
                out.extend_from_slice(&c.seen_ms.to_le_bytes());
                if t >= TYPE_STREAM_LISTPACKS_3 {
                    // Never active is -1.
                    out.extend_from_slice(&c.active_ms.unwrap_or(u64::MAX).to_le_bytes());
                }
                let own = g.pending.iter().filter(|p| p.consumer == i);
                put_len(&mut out, own.clone().count() as u64);
                for p in own {
                    out.extend_from_slice(&p.id.to_bytes());
                }
            }
        }
        let version = match t {
            TYPE_STREAM_LISTPACKS => WRITE_VERSION,
            TYPE_STREAM_LISTPACKS_2 => STREAM_WRITE_VERSION,
            _ => READ_VERSION,
        };
        seal(out, version)
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// A stream of type `t` (15, 19 or 21), after its type byte.
pub(super) fn read(r: &mut Reader<'_>, t: u8) -> Result<RdbStream, RdbError> {
    let bad = RdbError::Format;
    let mut s = RdbStream::default();
    // Each node takes bytes, so a false count runs out of them.
    let nodes = r.len()?;
    for _ in 0..nodes {
        let key = r.string()?;
        let master = StreamId::from_bytes(&key).ok_or(bad)?;
        let blob = r.string()?;
        stream_node(&blob, master, &mut s.entries, &mut r.budget)?;
    }
    let length = r.len()?;
    s.meta.last_id = r.id()?;
    let first = s.entries.first().map_or(StreamId::MIN, |e| e.0);
    if t >= TYPE_STREAM_LISTPACKS_2 {
        // The first ID is what the entries say.
        r.id()?;
        s.meta.max_deleted = r.id()?;
        s.meta.entries_added = r.len()?;
    } else {
        s.meta.entries_added = length;
    }
    let last_entry = s.entries.last().map(|e| e.0);
    if length != s.entries.len() as u64
        || last_entry.is_some_and(|l| l > s.meta.last_id)
        || s.meta.entries_added < length
    {
        return Err(bad);
    }
    let groups = r.len()?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_delivered = r.id()?;
        let entries_read = if t >= TYPE_STREAM_LISTPACKS_2 {
            Some(r.len()?).filter(|&n| n != u64::MAX)
        } else {
            estimate_read(&s, length, first, last_delivered)
        };
        // An ID, a delivery time, a count: at least 25 bytes each.
        let n = r.count_any(25)?;
        let mut pending = Vec::with_capacity(n);
        for _ in 0..n {
            r.charge(16)?;
            let id = StreamId::from_bytes(r.take(16)?).ok_or(bad)?;
            let delivered_ms = u64::from_le_bytes(r.array()?);
            let deliveries = r.len()?;
            if pending.last().is_some_and(|p: &RdbPending| p.id >= id) {
                return Err(bad);
            }
            pending.push(RdbPending {
                id,
                delivered_ms,
                deliveries,
                consumer: usize::MAX,
            });
        }
        // A name, a seen time, a count: at least 10 bytes each.
        let n = r.count_any(10)?;
        let mut consumers = Vec::with_capacity(n);
        for i in 0..n {
            let name = r.string()?;
            let seen_ms = u64::from_le_bytes(r.array()?);
            let active_ms = if t >= TYPE_STREAM_LISTPACKS_3 {
                Some(u64::from_le_bytes(r.array()?)).filter(|&a| a != u64::MAX)
            } else {
                Some(seen_ms)
            };
            for _ in 0..r.count_any(16)? {
                let id = StreamId::from_bytes(r.take(16)?).ok_or(bad)?;
                let at = pending
                    .binary_search_by_key(&id, |p| p.id)
                    .map_err(|_| bad)?;
                if pending[at].consumer != usize::MAX {
                    return Err(bad);
                }
                pending[at].consumer = i;
            }
            consumers.push(RdbConsumer {
                name,
                seen_ms,
                active_ms,
            });
        }
        if pending.iter().any(|p| p.consumer == usize::MAX) || has_repeats(&consumers, |c| &c.name)
        {
            return Err(bad);
        }
        s.groups.push(RdbGroup {
            name,
            last_delivered,
            entries_read,
            pending,
            consumers,
        });
    }
    if has_repeats(&s.groups, |g| &g.name) {
        return Err(bad);
    }
    Ok(s)
}

/// True if two of `items` have the same name.
fn has_repeats<T>(items: &[T], name: impl Fn(&T) -> &[u8]) -> bool {
    let mut names: Vec<&[u8]> = items.iter().map(name).collect();
    names.sort_unstable();
    names.windows(2).any(|w| w[0] == w[1])
}

/// A group's entries-read in a type 15 stream, which has none: known
/// where the position of its last delivered ID is (nothing deleted is
/// recorded, and everything ever added is still there).
fn estimate_read(s: &RdbStream, length: u64, first: StreamId, last: StreamId) -> Option<u64> {
    let added = s.meta.entries_added;
    if added == 0 || last == s.meta.last_id || (length == 0 && last < s.meta.last_id) {
        return Some(added);
    }
    if last > s.meta.last_id {
        return None;
    }
    match last.cmp(&first) {
        std::cmp::Ordering::Less => Some(added - length),
        std::cmp::Ordering::Equal => Some(added - length + 1),
        std::cmp::Ordering::Greater => None,
    }
}

/// The live entries of one node's listpack (see [`StreamDump`]), each
/// above the last of `entries`, appended to them.
fn stream_node(
    blob: &[u8],
    master: StreamId,
    entries: &mut Vec<(StreamId, Vec<Vec<u8>>)>,
    budget: &mut usize,
) -> Result<(), RdbError> {
    let bad = RdbError::Format;
    let mut lp = Listpack::open(blob)?;
    let live = lp.count()?;
    let deleted = lp.count()?;
    let n = lp.count()?;
    // The master fields, each at least 2 bytes of the listpack.
    if n > blob.len() as u64 / 2 {
        return Err(bad);
    }
    let mut fields = Vec::with_capacity(n as usize);
    for _ in 0..n {
        fields.push(lp.element()?);
    }
    if lp.int()? != 0 {
        return Err(bad);
    }
    let (mut seen_live, mut seen_deleted) = (0u64, 0u64);
    while let Some(flags) = lp.next()? {
        let flags = flags.int()?;
        let id = StreamId {
            ms: master.ms.wrapping_add(lp.int()? as u64),
            seq: master.seq.wrapping_add(lp.int()? as u64),
        };
        let same = flags & ENTRY_SAMEFIELDS != 0;
        let keep = flags & ENTRY_DELETED == 0;
        let pairs = if same { n } else { lp.count()? };
        let mut parts = Vec::new();
        for i in 0..pairs {
            let field = match same {
                true => fields.get(i as usize).copied().ok_or(bad)?,
                false => lp.element()?,
            };
            let value = lp.element()?;
            if keep {
                parts.push(field.bytes(budget)?);
                parts.push(value.bytes(budget)?);
            }
        }
        let want = if same { 3 + pairs } else { 4 + 2 * pairs };
        if lp.count()? != want {
            return Err(bad);
        }
        if !keep {
            seen_deleted += 1;
            continue;
        }
        if entries.last().is_some_and(|e| e.0 >= id) {
            return Err(bad);
        }
        *budget = budget.checked_sub(ELEMENT_COST).ok_or(RdbError::TooLarge)?;
        entries.push((id, parts));
        seen_live += 1;
    }
    if (seen_live, seen_deleted) != (live, deleted) {
        return Err(bad);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Redis 7.0.15's DUMP of a stream: entries 1-1 (a 1 b hello), 1-2
    /// (deleted) and 5-0 (other v); group g at 1-1 with entries-read
    /// unknown, 1-1 pending for alice, bob with nothing pending.
    #[test]
    fn reads_a_stream_redis_dumps() {
        let p = hex(
            "130110000000000000000100000000000000014048480000001900020101010201816102816202\
             000102010001000101018568656c6c6f0605010301000101010201817802050100010401dfff02\
             0101856f74686572068176020601ff0205000101010203010167010181ffffffffffffffff0100\
             000000000000010000000000000001483b131ea2010000010205616c696365483b131ea2010000\
             010000000000000001000000000000000103626f624c3b131ea2010000000a008758d5319bf14cd2",
        );
        let Ok(RdbValue::Stream(s)) = decode(&p, 1 << 20) else {
            panic!("{:?}", decode(&p, 1 << 20));
        };
        let v = |b: &[&str]| b.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            s.entries,
            vec![
                (sid(1, 1), v(&["a", "1", "b", "hello"])),
                (sid(5, 0), v(&["other", "v"]))
            ]
        );
        assert_eq!(
            s.meta,
            StreamMeta {
                last_id: sid(5, 0),
                max_deleted: sid(1, 2),
                entries_added: 3
            }
        );
        let t = 0x01a2_1e13_3b48;
        assert_eq!(
            s.groups,
            vec![RdbGroup {
                name: b"g".to_vec(),
                last_delivered: sid(1, 1),
                entries_read: None,
                pending: vec![RdbPending {
                    id: sid(1, 1),
                    delivered_ms: t,
                    deliveries: 1,
                    consumer: 0
                }],
                consumers: vec![
                    RdbConsumer {
                        name: b"alice".to_vec(),
                        seen_ms: t,
                        active_ms: Some(t)
                    },
                    RdbConsumer {
                        name: b"bob".to_vec(),
                        seen_ms: t + 4,
                        active_ms: Some(t + 4)
                    }
                ]
            }]
        );
    }

    /// A stream with what every part of the format has: nodes cut by
    /// count and by bytes, entries with the master's fields and without,
    /// integers, an empty value, an ID below its node's master in seq,
    /// two groups, a consumer never active, an unknown entries-read.
    fn sample(n: u64, scale: usize) -> RdbStream {
        let mut entries = Vec::new();
        for i in 0..n {
            let parts: Vec<Vec<u8>> = match i % 5 {
                0 => vec![b"f".to_vec(), i.to_string().into_bytes()],
                1 => vec![b"f".to_vec(), b"".to_vec(), b"g".to_vec(), b"-7".to_vec()],
                2 => vec![b"big".to_vec(), vec![b'x'; scale * 3 * (i as usize % 20)]],
                3 => vec![
                    b"f".to_vec(),
                    (-(i as i64) * 100_000_000_000).to_string().into_bytes(),
                ],
                _ => vec![b"f".to_vec(), vec![0xff; scale * 50]],
            };
            // Seqs up and down: below the node's first entry's too.
            entries.push((sid(1_000 + i, (i * 7919) % 13), parts));
        }
        entries.push((sid(u64::MAX - 1, 0), vec![b"k".to_vec(), b"v".to_vec()]));
        let consumers = vec![
            RdbConsumer {
                name: b"alice".to_vec(),
                seen_ms: 1_700_000_000_000,
                active_ms: Some(1_699_999_999_000),
            },
            RdbConsumer {
                name: b"bob".to_vec(),
                seen_ms: 5,
                active_ms: None,
            },
        ];
        let pending = (0..10)
            .map(|i| RdbPending {
                id: entries[i * (n as usize - 1) / 10].0,
                delivered_ms: 1_700_000_000_000 + i as u64,
                deliveries: 1 + i as u64 * 1000,
                consumer: i % 2,
            })
            .collect();
        RdbStream {
            meta: StreamMeta {
                last_id: sid(u64::MAX - 1, 5),
                max_deleted: sid(3, 3),
                entries_added: 400,
            },
            entries,
            groups: vec![
                RdbGroup {
                    name: b"g1".to_vec(),
                    last_delivered: sid(2_000, 0),
                    entries_read: Some(77),
                    pending,
                    consumers,
                },
                RdbGroup {
                    name: b"g2".to_vec(),
                    last_delivered: StreamId::MIN,
                    entries_read: None,
                    ..RdbGroup::default()
                },
            ],
        }
    }

    fn dump_as(s: &RdbStream, t: u8) -> Vec<u8> {
        let mut d = StreamDump::new();
        for (id, parts) in &s.entries {
            let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
            d.entry(*id, &parts);
        }
        d.finish_as(t, &s.meta, &s.groups)
    }

    #[test]
    fn streams_round_trip_in_every_type() {
        let s = sample(250, 100);
        // 21 keeps everything.
        assert_eq!(
            decode(&dump_as(&s, TYPE_STREAM_LISTPACKS_3), usize::MAX),
            Ok(RdbValue::Stream(Box::new(s.clone())))
        );
        // 19 (what DUMP writes): a consumer's active time is its seen time.
        let p = dump_as(&s, TYPE_STREAM_LISTPACKS_2);
        assert_eq!(
            p[p.len() - 10..p.len() - 8],
            STREAM_WRITE_VERSION.to_le_bytes()
        );
        let mut want = s.clone();
        for c in &mut want.groups[0].consumers {
            c.active_ms = Some(c.seen_ms);
        }
        assert_eq!(
            decode(&p, usize::MAX),
            Ok(RdbValue::Stream(Box::new(want.clone())))
        );
        // Several nodes were written: by count, and by bytes.
        assert!(p.len() > 250 * 1000);
        // 15: nothing deleted recorded, entries-added is the length, and a
        // group's entries-read only where it can be known.
        let mut old = want;
        old.meta.max_deleted = StreamId::MIN;
        old.meta.entries_added = old.entries.len() as u64;
        old.groups[0].entries_read = None;
        old.groups[1].entries_read = Some(0);
        assert_eq!(
            decode(&dump_as(&s, TYPE_STREAM_LISTPACKS), usize::MAX),
            Ok(RdbValue::Stream(Box::new(old)))
        );
        // An empty stream with a group is a value.
        let empty = RdbStream {
            entries: Vec::new(),
            meta: StreamMeta {
                last_id: sid(9, 9),
                max_deleted: sid(9, 9),
                entries_added: 4,
            },
            groups: vec![s.groups[1].clone()],
        };
        assert_eq!(
            decode(&dump_as(&empty, TYPE_STREAM_LISTPACKS_3), 1 << 10),
            Ok(RdbValue::Stream(Box::new(empty)))
        );
    }

    #[test]
    fn hostile_streams_are_refused_without_panics() {
        let s = sample(30, 1);
        let p = dump_as(&s, TYPE_STREAM_LISTPACKS_3);
        let body = &p[..p.len() - 10];
        // Every truncation, and every byte changed, sealed again: an error
        // or a value, never a panic.
        for cut in 1..body.len() {
            assert!(decode(&seal(body[..cut].to_vec(), 11), usize::MAX).is_err());
        }
        for at in (0..body.len()).step_by(7) {
            for x in [1u8, 0x80, 0xff] {
                let mut b = body.to_vec();
                b[at] ^= x;
                let _ = decode(&seal(b, 11), usize::MAX);
            }
        }
        // The budget is charged: the entries alone take more than 2 KB.
        assert_eq!(decode(&p, 2_000), Err(RdbError::TooLarge));
        let payload = |s: &RdbStream| dump_as(s, TYPE_STREAM_LISTPACKS_3);
        let refused = |s: RdbStream| {
            assert_eq!(decode(&payload(&s), usize::MAX), Err(RdbError::Format));
        };
        // A pending entry without an owner; one owned twice (below).
        let mut t = s.clone();
        t.groups[0].pending[3].consumer = 9;
        refused(t);
        // Two groups, or two consumers, of one name.
        let mut t = s.clone();
        t.groups[1].name = b"g1".to_vec();
        refused(t);
        let mut t = s.clone();
        t.groups[0].consumers[1].name = b"alice".to_vec();
        refused(t);
        // The last ID below the last entry's.
        let mut t = s.clone();
        t.meta.last_id = sid(5, 0);
        refused(t);
        // Entries out of order.
        let mut t = s.clone();
        t.entries.swap(3, 4);
        refused(t);
        // Pending entries out of order.
        let mut t = s.clone();
        t.groups[0].pending.swap(0, 1);
        refused(t);

        // Counts far beyond the bytes: nodes, groups, a PEL, consumers.
        let mut head = vec![TYPE_STREAM_LISTPACKS_2, 0, 0];
        put_id(&mut head, sid(1, 1));
        put_id(&mut head, StreamId::MIN);
        put_id(&mut head, StreamId::MIN);
        put_len(&mut head, 0);
        for tail in [
            vec![0x81, 0, 0, 1, 0, 0, 0, 0, 0],
            vec![1, 1, b'g', 0, 0, 0, 0x81, 0, 0, 1, 0, 0, 0, 0, 0],
            vec![1, 1, b'g', 0, 0, 0, 0, 0x80, 0x7f, 0xff, 0xff, 0xff],
        ] {
            let mut b = head.clone();
            b.extend_from_slice(&tail);
            assert_eq!(decode(&seal(b, 10), usize::MAX), Err(RdbError::Format));
        }
        let mut nodes = vec![TYPE_STREAM_LISTPACKS_2, 0x81];
        nodes.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(decode(&seal(nodes, 10), usize::MAX), Err(RdbError::Format));

        // A consumer claiming an entry another owns: one group, its one
        // pending entry alice's; bob's PEL count (0, the last byte) made
        // 1, with that ID.
        let mut t = s.clone();
        t.groups.truncate(1);
        t.groups[0].pending.truncate(1);
        t.groups[0].pending[0].consumer = 0;
        let p = payload(&t);
        let mut b = p[..p.len() - 10].to_vec();
        let last = b.len() - 1;
        assert_eq!(b[last], 0);
        b[last] = 1;
        b.extend_from_slice(&t.groups[0].pending[0].id.to_bytes());
        assert_eq!(decode(&seal(b, 11), usize::MAX), Err(RdbError::Format));
    }
}
