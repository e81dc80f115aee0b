//! A stream's consumer groups: per group the last ID delivered, the
//! pending entries list (PEL: delivered, not acknowledged) and the
//! consumers, each with its share of the PEL.
//!
//! ```text
//!  StreamBody.groups: BTreeMap<name, Group {
//!      last_delivered, entries_read,
//!      pending:   BTreeMap<StreamId, Pending { consumer, delivered_ms, deliveries }>,
//!      consumers: BTreeMap<name, Consumer { seen_ms, active_ms, pending: BTreeSet<StreamId> }> }>
//! ```
//!
//! Everything is on the heap and charged to the store's limit through the
//! stream's [`Dict`](super::Dict): [`GroupCost`] keeps a running total
//! that each change adjusts in O(1), so a write costs what it touches.

use super::dict::heap_cost;
use super::stream::StreamId;
use std::collections::{BTreeMap, BTreeSet};

/// Heap bytes of a group besides its name: its struct and tree entry.
const GROUP_BYTES: usize = 160;
/// Heap bytes of a consumer besides its name.
const CONSUMER_BYTES: usize = 96;
/// Heap bytes of a PEL entry besides the consumer name it carries: the
/// group's tree entry and the consumer's (nodes about half full).
const PENDING_BYTES: usize = 128;

/// One delivered, unacknowledged entry.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The consumer it was delivered to.
    pub consumer: Box<[u8]>,
    /// When it was last delivered (Unix ms).
    pub delivered_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default)]
pub struct Consumer {
    /// Its last attempted interaction (Unix ms).
    pub seen_ms: u64,
    /// Its last successful interaction (a read that returned entries, a
    /// claim), if any.
    pub active_ms: Option<u64>,
    /// The IDs of its pending entries.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// The last entry delivered to any of its consumers.
    pub last_delivered: StreamId,
    /// Entries the group has read (for the lag), when known.
    pub entries_read: Option<u64>,
    pending: BTreeMap<StreamId, Pending>,
    consumers: BTreeMap<Box<[u8]>, Consumer>,
}

/// A running total of the heap bytes of a stream's groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCost(pub usize);

impl GroupCost {
    fn add(&mut self, n: usize) {
        self.0 += n;
    }
    fn sub(&mut self, n: usize) {
        self.0 -= n;
    }
}

fn consumer_cost(name: &[u8]) -> usize {
    CONSUMER_BYTES + heap_cost(name.len())
}

fn pending_cost(consumer: &[u8]) -> usize {
    PENDING_BYTES + heap_cost(consumer.len())
}

/// The cost of a whole group (its name, consumers and PEL).
fn group_cost(name: &[u8], g: &Group) -> usize {
    GROUP_BYTES
        + heap_cost(name.len())
        + g.consumers.keys().map(|c| consumer_cost(c)).sum::<usize>()
        + g.pending
            .values()
            .map(|p| pending_cost(&p.consumer))
            .sum::<usize>()
}

/// A stream's groups, with their cost.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    groups: BTreeMap<Box<[u8]>, Group>,
    cost: GroupCost,
}

impl Groups {
    /// Heap bytes charged for every group.
    pub fn cost(&self) -> usize {
        self.cost.0
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Every group, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Group)> {
        self.groups.iter().map(|(k, g)| (&k[..], g))
    }

    /// Group `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    /// Creates group `name`; false if it exists.
    pub fn create(&mut self, name: &[u8], last: StreamId, entries_read: Option<u64>) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        let g = Group {
            last_delivered: last,
            entries_read,
            ..Group::default()
        };
        self.cost.add(group_cost(name, &g));
        self.groups.insert(name.into(), g);
        true
    }

    /// Removes group `name`; false if absent.
    pub fn destroy(&mut self, name: &[u8]) -> bool {
        match self.groups.remove_entry(name) {
            Some((k, g)) => {
                self.cost.sub(group_cost(&k, &g));
                true
            }
            None => false,
        }
    }

    /// Runs `f` on group `name` (None if absent), keeping the cost.
    pub fn edit<R>(&mut self, name: &[u8], f: impl FnOnce(&mut GroupEdit<'_>) -> R) -> Option<R> {
        let g = self.groups.get_mut(name)?;
        Some(f(&mut GroupEdit {
            g,
            cost: &mut self.cost,
        }))
    }
}

impl Group {
    /// Its PEL, by ID.
    pub fn pending(&self) -> &BTreeMap<StreamId, Pending> {
        &self.pending
    }

    /// Its consumers, by name.
    pub fn consumers(&self) -> impl Iterator<Item = (&[u8], &Consumer)> {
        self.consumers.iter().map(|(k, c)| (&k[..], c))
    }

    /// Consumer `name`.
    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }
}

/// A group being changed (see [`Groups::edit`]).
pub struct GroupEdit<'a> {
    g: &'a mut Group,
    cost: &'a mut GroupCost,
}

impl GroupEdit<'_> {
    /// The group.
    pub fn group(&self) -> &Group {
        self.g
    }

    /// Sets the last delivered ID (and the entries read, if given).
    pub fn set_last(&mut self, last: StreamId, entries_read: Option<u64>) {
        self.g.last_delivered = last;
        self.g.entries_read = entries_read;
    }

    /// Consumer `name`, created if absent (true if it was), marked seen at
    /// `now_ms`.
    pub fn touch_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        let created = !self.g.consumers.contains_key(name);
        if created {
            self.cost.add(consumer_cost(name));
            self.g.consumers.insert(name.into(), Consumer::default());
        }
        if let Some(c) = self.g.consumers.get_mut(name) {
            c.seen_ms = now_ms;
        }
        created
    }

    /// Marks consumer `name` active at `now_ms`.
    pub fn activate(&mut self, name: &[u8], now_ms: u64) {
        if let Some(c) = self.g.consumers.get_mut(name) {
            c.active_ms = Some(now_ms);
        }
    }

    /// Removes consumer `name` and its pending entries; how many it had
    /// (None if there was no such consumer).
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let (k, c) = self.g.consumers.remove_entry(name)?;
        for id in &c.pending {
            if let Some(p) = self.g.pending.remove(id) {
                self.cost.sub(pending_cost(&p.consumer));
            }
        }
        self.cost.sub(consumer_cost(&k));
        Some(c.pending.len())
    }

    /// Entry `id` delivered as new (`>`) to `consumer` (which exists) at
    /// `now_ms`: a new PEL entry, or, if pending already (the group's ID
    /// was set back), moved to it and counted from 1 again, as in Redis.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: u64) {
        self.release(id);
        self.hold(id, consumer, now_ms, 1);
    }

    /// Pending entry `id` served again from its consumer's history at
    /// `now_ms`: one more delivery, timed now (as XREADGROUP with an ID
    /// counts it in Redis).
    pub fn redeliver(&mut self, id: StreamId, now_ms: u64) {
        if let Some(p) = self.g.pending.get_mut(&id) {
            p.delivered_ms = now_ms;
            p.deliveries += 1;
        }
    }

    /// Puts `id` in the PEL of `consumer` (which exists).
    fn hold(&mut self, id: StreamId, consumer: &[u8], delivered_ms: u64, deliveries: u64) {
        let Some(c) = self.g.consumers.get_mut(consumer) else {
            return;
        };
        c.pending.insert(id);
        self.cost.add(pending_cost(consumer));
        self.g.pending.insert(
            id,
            Pending {
                consumer: consumer.into(),
                delivered_ms,
                deliveries,
            },
        );
    }

    /// Takes `id` out of the PEL (and its consumer's); what it was.
    pub fn release(&mut self, id: StreamId) -> Option<Pending> {
        let p = self.g.pending.remove(&id)?;
        if let Some(c) = self.g.consumers.get_mut(&p.consumer) {
            c.pending.remove(&id);
        }
        self.cost.sub(pending_cost(&p.consumer));
        Some(p)
    }

    /// Gives pending entry `id` to `consumer` (which exists) with this
    /// delivery time and count.
    pub fn transfer(&mut self, id: StreamId, consumer: &[u8], delivered_ms: u64, deliveries: u64) {
        self.release(id);
        self.hold(id, consumer, delivered_ms, deliveries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId { ms, seq: 0 }
    }

    /// The running cost always equals a recount.
    fn check(gs: &Groups) {
        let recount: usize = gs.groups.iter().map(|(k, g)| group_cost(k, g)).sum();
        assert_eq!(gs.cost(), recount);
    }

    #[test]
    fn deliver_ack_claim_and_delete_keep_the_books() {
        let mut gs = Groups::default();
        assert!(gs.create(b"g", StreamId::MIN, Some(0)));
        assert!(!gs.create(b"g", StreamId::MIN, None));
        check(&gs);
        gs.edit(b"g", |e| {
            assert!(e.touch_consumer(b"alice", 10));
            assert!(!e.touch_consumer(b"alice", 11));
            e.touch_consumer(b"bob", 12);
            for ms in 1..=5 {
                e.deliver(id(ms), b"alice", 20);
            }
            // Served again from alice's history: one more delivery.
            e.redeliver(id(2), 25);
            assert_eq!(e.group().pending()[&id(2)].deliveries, 2);
            // Delivered as new again (to bob): moved, counted from 1.
            e.deliver(id(2), b"bob", 30);
            let g = e.group();
            assert_eq!(g.pending()[&id(2)].deliveries, 1);
            assert_eq!(&*g.pending()[&id(2)].consumer, b"bob");
            assert_eq!(g.consumer(b"alice").unwrap().pending.len(), 4);
            assert!(e.release(id(3)).is_some());
            assert!(e.release(id(3)).is_none());
            e.transfer(id(4), b"bob", 40, 7);
            assert_eq!(e.delete_consumer(b"alice"), Some(2));
            assert_eq!(e.delete_consumer(b"alice"), None);
        })
        .unwrap();
        check(&gs);
        let g = gs.get(b"g").unwrap();
        assert_eq!(
            g.pending().keys().copied().collect::<Vec<_>>(),
            [id(2), id(4)]
        );
        assert!(gs.destroy(b"g"));
        assert_eq!(gs.cost(), 0);
        assert!(gs.edit(b"g", |_| ()).is_none());
    }
}
