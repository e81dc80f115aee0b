//! Where Redis Pub/Sub messages go: the channels, patterns and shard
//! channels with their subscribers, and each subscriber's mailbox.
//!
//! `PUBLISH` puts the message (one shared copy of its bytes) in the
//! mailbox of every subscriber of the channel and of every matching
//! pattern (`SPUBLISH`: of the shard channel, a namespace of its own), and
//! calls that connection's waker
//! ([`granola_net::park::ConnWaker`]); the subscriber's session, parked
//! while it is subscribed, runs again and writes what its mailbox holds
//! ([`Subscriber::next`]). Subscribers on any worker are reached at once.
//!
//! A subscriber that reads slowly gets its messages as its socket takes
//! them: they are written while its reply queue is under the back-pressure
//! mark, and the rest wait in its mailbox (the server calls it again when
//! the queue drains). One that does not read is cut off as Redis cuts one
//! off (`client-output-buffer-limit pubsub 32mb`): once its mailbox passes
//! [`OUTPUT_LIMIT`], the connection is closed with a log line. Publishers
//! never wait for a subscriber, and a stuck one holds no more than the
//! back-pressure mark of connection-buffer memory.

use super::glob;
use granola_net::park::ConnWaker;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Most bytes a subscriber may have waiting undelivered in its mailbox
/// before it is disconnected: Redis's hard pubsub limit. (What is already
/// in its reply queue is bounded by the back-pressure mark.)
pub const OUTPUT_LIMIT: usize = 32 << 20;

/// What a subscription names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// A channel (`SUBSCRIBE`, `PUBLISH`).
    Channel,
    /// A glob pattern over channels (`PSUBSCRIBE`).
    Pattern,
    /// A shard channel (`SSUBSCRIBE`, `SPUBLISH`). One server is the one
    /// shard, so these differ from channels only in their namespace.
    Shard,
}

/// What a mailbox holds for its connection.
pub enum Delivery {
    /// A published message.
    Message {
        /// The pattern it matched (`pmessage`), or `None` (`message`, or
        /// `smessage` if `shard`).
        pattern: Option<Arc<[u8]>>,
        /// Published with `SPUBLISH`.
        shard: bool,
        /// The channel.
        channel: Arc<[u8]>,
        /// The payload, shared by every subscriber.
        payload: Arc<[u8]>,
    },
    /// A MONITOR line.
    Monitor(Arc<[u8]>),
    /// Client tracking: these keys changed (`None`: all of them, a
    /// flush).
    Invalidate(Option<Arc<[Vec<u8>]>>),
    /// Client tracking: the connection this one redirects its
    /// invalidations to (by id) is gone.
    RedirectBroken(u64),
}

impl Delivery {
    fn bytes(&self) -> usize {
        64 + match self {
            Delivery::Message {
                pattern,
                channel,
                payload,
                ..
            } => pattern.as_ref().map_or(0, |p| p.len()) + channel.len() + payload.len(),
            Delivery::Monitor(line) => line.len(),
            Delivery::Invalidate(keys) => keys
                .as_ref()
                .map_or(0, |k| k.iter().map(|k| k.len() + 16).sum()),
            Delivery::RedirectBroken(_) => 0,
        }
    }
}

/// A subscriber's undelivered messages.
pub struct Mailbox {
    queue: Mutex<VecDeque<Delivery>>,
    bytes: AtomicUsize,
    /// It passed [`OUTPUT_LIMIT`]: it is closed at its next turn.
    overflow: AtomicBool,
    waker: ConnWaker,
}

impl Mailbox {
    /// Client tracking: tells the connection that `keys` changed (`None`:
    /// every key).
    pub fn invalidate(&self, keys: Option<Arc<[Vec<u8>]>>) {
        if !self.overflow.load(Ordering::Relaxed) {
            self.put(Delivery::Invalidate(keys));
        }
    }

    /// Client tracking: the redirect target `id` is gone.
    pub fn redirect_broken(&self, id: u64) {
        if !self.overflow.load(Ordering::Relaxed) {
            self.put(Delivery::RedirectBroken(id));
        }
    }

    fn put(&self, d: Delivery) {
        let n = d.bytes();
        if self.bytes.load(Ordering::Relaxed) + n > OUTPUT_LIMIT {
            // Cut off: what it had waiting is dropped now, and publishers
            // pass it by until its connection is gone.
            self.overflow.store(true, Ordering::Relaxed);
            let dropped =
                std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()));
            self.bytes.store(0, Ordering::Relaxed);
            drop(dropped);
            self.waker.wake();
            return;
        }
        self.bytes.fetch_add(n, Ordering::Relaxed);
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = q.is_empty();
        q.push_back(d);
        drop(q);
        // A mailbox with mail is already due to be read (woken, or paused
        // on its reply queue): one wake per batch, not per message.
        if was_empty {
            self.waker.wake();
        }
    }
}

/// Channel (or pattern) -> subscriber id -> its mailbox.
type Table = Mutex<HashMap<Box<[u8]>, HashMap<u64, Arc<Mailbox>>>>;

/// Every channel, pattern and shard channel with its subscribers.
#[derive(Default)]
pub struct Bus {
    channels: Table,
    patterns: Table,
    shard_channels: Table,
    /// MONITOR clients by id.
    monitors: Mutex<HashMap<u64, Arc<Mailbox>>>,
    /// How many there are (one load per command while there are none).
    monitor_count: AtomicUsize,
    /// Channel and pattern subscriptions, all clients together.
    listeners: AtomicUsize,
    /// Every subscriber's mailbox by client id: where client tracking's
    /// `REDIRECT` finds its target.
    mailboxes: Mutex<HashMap<u64, Weak<Mailbox>>>,
}

impl Bus {
    /// The mailbox of client `id`, while that connection has one (it has
    /// subscribed to something, runs MONITOR or tracks keys).
    pub fn mailbox_of(&self, id: u64) -> Option<Arc<Mailbox>> {
        lock(&self.mailboxes).get(&id).and_then(Weak::upgrade)
    }

    fn table(&self, topic: Topic) -> &Table {
        match topic {
            Topic::Channel => &self.channels,
            Topic::Pattern => &self.patterns,
            Topic::Shard => &self.shard_channels,
        }
    }

    /// `PUBLISH`: delivers `payload` on `channel`; returns the number of
    /// receivers (channel subscribers plus matching patterns' ones).
    pub fn publish(&self, channel: &[u8], payload: &[u8]) -> usize {
        self.publish_to(Topic::Channel, channel, payload)
    }

    /// `SPUBLISH`: delivers `payload` to the subscribers of shard channel
    /// `channel` (patterns do not see shard channels); returns how many.
    pub fn spublish(&self, channel: &[u8], payload: &[u8]) -> usize {
        self.publish_to(Topic::Shard, channel, payload)
    }

    fn publish_to(&self, topic: Topic, channel: &[u8], payload: &[u8]) -> usize {
        // The shared copies are made for the first receiver: a message
        // nobody hears (most keyspace events) allocates nothing.
        type Copies = (Arc<[u8]>, Arc<[u8]>);
        let mut copies: Option<Copies> = None;
        let mut shared = || {
            copies
                .get_or_insert_with(|| (Arc::from(channel), Arc::from(payload)))
                .clone()
        };
        let shard = topic == Topic::Shard;
        let mut n = 0;
        if let Some(subs) = lock(self.table(topic)).get(channel) {
            for mb in subs
                .values()
                .filter(|mb| !mb.overflow.load(Ordering::Relaxed))
            {
                let (channel, payload) = shared();
                mb.put(Delivery::Message {
                    pattern: None,
                    shard,
                    channel,
                    payload,
                });
                n += 1;
            }
        }
        if shard {
            return n;
        }
        for (pattern, subs) in lock(&self.patterns).iter() {
            if !glob::matches(pattern, channel, false) {
                continue;
            }
            let pattern: Arc<[u8]> = Arc::from(&pattern[..]);
            for mb in subs
                .values()
                .filter(|mb| !mb.overflow.load(Ordering::Relaxed))
            {
                let (channel, payload) = shared();
                mb.put(Delivery::Message {
                    pattern: Some(pattern.clone()),
                    shard: false,
                    channel,
                    payload,
                });
                n += 1;
            }
        }
        n
    }

    /// `PUBSUB CHANNELS [pattern]` (`SHARDCHANNELS` for [`Topic::Shard`]):
    /// channels with subscribers.
    pub fn channels(&self, topic: Topic, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = lock(self.table(topic))
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false)))
            .map(|c| c.to_vec())
            .collect();
        out.sort();
        out
    }

    /// `PUBSUB NUMSUB` (`SHARDNUMSUB` for [`Topic::Shard`]): subscribers
    /// of `channel`.
    pub fn numsub(&self, topic: Topic, channel: &[u8]) -> usize {
        lock(self.table(topic)).get(channel).map_or(0, HashMap::len)
    }

    /// Channels with subscribers (`INFO`'s `pubsub_channels`).
    pub fn num_channels(&self) -> usize {
        lock(&self.channels).len()
    }

    /// True while a client runs MONITOR.
    #[inline]
    pub fn monitored(&self) -> bool {
        self.monitor_count.load(Ordering::Relaxed) != 0
    }

    /// Hands a MONITOR line to every monitoring client.
    pub fn feed_monitors(&self, line: &[u8]) {
        let line: Arc<[u8]> = Arc::from(line);
        for mb in lock(&self.monitors)
            .values()
            .filter(|mb| !mb.overflow.load(Ordering::Relaxed))
        {
            mb.put(Delivery::Monitor(line.clone()));
        }
    }

    /// `PUBSUB NUMPAT`: patterns with subscribers.
    pub fn numpat(&self) -> usize {
        lock(&self.patterns).len()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Bus {
    /// Adds (`Some` mailbox) or removes subscriber `id` under `name`.
    fn enrol(&self, topic: Topic, name: &[u8], id: u64, mailbox: Option<&Arc<Mailbox>>) {
        let mut t = lock(self.table(topic));
        let changed = match mailbox {
            Some(mb) => t
                .entry(Box::from(name))
                .or_default()
                .insert(id, mb.clone())
                .is_none(),
            None => match t.get_mut(name) {
                Some(subs) => {
                    let had = subs.remove(&id).is_some();
                    if subs.is_empty() {
                        t.remove(name);
                    }
                    had
                }
                None => false,
            },
        };
        if changed && topic != Topic::Shard {
            if mailbox.is_some() {
                self.listeners.fetch_add(1, Ordering::Relaxed);
            } else {
                self.listeners.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// True if some client subscribed to a channel or a pattern (one
    /// load: keyspace notifications skip their work while none has).
    #[inline]
    pub fn listened(&self) -> bool {
        self.listeners.load(Ordering::Relaxed) != 0
    }
}

/// A connection's subscriptions; dropping it (RESET, the last
/// unsubscribe, the connection closing) leaves every one.
pub struct Subscriber {
    bus: Arc<Bus>,
    id: u64,
    mailbox: Arc<Mailbox>,
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
    shard_channels: BTreeSet<Vec<u8>>,
    /// Running MONITOR.
    monitoring: bool,
    /// Client tracking is on (its invalidations come through here).
    tracking: bool,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("channels", &self.channels.len())
            .field("patterns", &self.patterns.len())
            .field("shard_channels", &self.shard_channels.len())
            .finish()
    }
}

impl Subscriber {
    /// A subscriber with no subscriptions yet, woken through `waker`.
    pub fn new(bus: Arc<Bus>, id: u64, waker: ConnWaker) -> Subscriber {
        let mailbox = Arc::new(Mailbox {
            queue: Mutex::new(VecDeque::new()),
            bytes: AtomicUsize::new(0),
            overflow: AtomicBool::new(false),
            waker,
        });
        lock(&bus.mailboxes).insert(id, Arc::downgrade(&mailbox));
        Subscriber {
            bus,
            id,
            mailbox,
            channels: BTreeSet::new(),
            patterns: BTreeSet::new(),
            shard_channels: BTreeSet::new(),
            monitoring: false,
            tracking: false,
        }
    }

    /// Client tracking on or off for this connection: while on, the
    /// mailbox stays (see [`Subscriber::total`]).
    pub fn set_tracking(&mut self, on: bool) {
        self.tracking = on;
    }

    /// The mailbox, for client tracking's invalidations.
    pub fn mailbox(&self) -> Arc<Mailbox> {
        self.mailbox.clone()
    }

    /// Starts receiving every command the server runs (MONITOR).
    pub fn monitor(&mut self) {
        if !self.monitoring {
            self.monitoring = true;
            lock(&self.bus.monitors).insert(self.id, self.mailbox.clone());
            self.bus.monitor_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// True after MONITOR.
    pub fn monitoring(&self) -> bool {
        self.monitoring
    }

    /// The count an (un)subscribe reply for `topic` carries: channels plus
    /// patterns, or shard channels (as Redis counts them).
    pub fn count(&self, topic: Topic) -> usize {
        match topic {
            Topic::Channel | Topic::Pattern => self.channels.len() + self.patterns.len(),
            Topic::Shard => self.shard_channels.len(),
        }
    }

    /// Channels, patterns and shard channels subscribed to (`CLIENT
    /// LIST`'s `sub`, `psub`, `ssub`).
    pub fn subscriptions(&self) -> [usize; 3] {
        [
            self.channels.len(),
            self.patterns.len(),
            self.shard_channels.len(),
        ]
    }

    /// Subscriptions of every kind (MONITOR and client tracking count as
    /// one each): none left ends subscribed mode.
    pub fn total(&self) -> usize {
        self.channels.len()
            + self.patterns.len()
            + self.shard_channels.len()
            + usize::from(self.monitoring)
            + usize::from(self.tracking)
    }

    /// True if the connection has (P|S)SUBSCRIBEd or runs MONITOR:
    /// RESP2's subscribed mode. Client tracking alone is not.
    pub fn subscribed(&self) -> bool {
        self.total() > usize::from(self.tracking)
    }

    /// Subscribes to `name`.
    pub fn add(&mut self, name: &[u8], topic: Topic) {
        let (id, mailbox, bus) = (self.id, self.mailbox.clone(), self.bus.clone());
        if self.set(topic).insert(name.to_vec()) {
            bus.enrol(topic, name, id, Some(&mailbox));
        }
    }

    /// Unsubscribes from `name`; false if it was not subscribed.
    pub fn remove(&mut self, name: &[u8], topic: Topic) -> bool {
        let (id, bus) = (self.id, self.bus.clone());
        let had = self.set(topic).remove(name);
        if had {
            bus.enrol(topic, name, id, None);
        }
        had
    }

    /// The names subscribed to under `topic`, in order.
    pub fn names(&mut self, topic: Topic) -> Vec<Vec<u8>> {
        self.set(topic).iter().cloned().collect()
    }

    fn set(&mut self, topic: Topic) -> &mut BTreeSet<Vec<u8>> {
        match topic {
            Topic::Channel => &mut self.channels,
            Topic::Pattern => &mut self.patterns,
            Topic::Shard => &mut self.shard_channels,
        }
    }

    /// `Err` once the subscriber passed the output limit.
    pub fn within_limit(&self) -> Result<(), String> {
        if self.mailbox.overflow.load(Ordering::Relaxed) {
            return Err(format!(
                "pubsub: subscriber over its {} MiB output limit",
                OUTPUT_LIMIT >> 20
            ));
        }
        Ok(())
    }

    /// The oldest message waiting, if any.
    pub fn next(&self) -> Option<Delivery> {
        let d = lock(&self.mailbox.queue).pop_front();
        if let Some(d) = &d {
            self.mailbox.bytes.fetch_sub(d.bytes(), Ordering::Relaxed);
        }
        d
    }

    /// True while messages wait in the mailbox.
    pub fn has_mail(&self) -> bool {
        self.mailbox.bytes.load(Ordering::Relaxed) > 0
            || self.mailbox.overflow.load(Ordering::Relaxed)
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        for c in std::mem::take(&mut self.channels) {
            self.bus.enrol(Topic::Channel, &c, self.id, None);
        }
        for p in std::mem::take(&mut self.patterns) {
            self.bus.enrol(Topic::Pattern, &p, self.id, None);
        }
        for c in std::mem::take(&mut self.shard_channels) {
            self.bus.enrol(Topic::Shard, &c, self.id, None);
        }
        if self.monitoring && lock(&self.bus.monitors).remove(&self.id).is_some() {
            self.bus.monitor_count.fetch_sub(1, Ordering::Relaxed);
        }
        lock(&self.bus.mailboxes).remove(&self.id);
    }
}
