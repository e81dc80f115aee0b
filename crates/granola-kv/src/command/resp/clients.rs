//! Who is connected: the registry `CLIENT LIST` reads and `CLIENT KILL`
//! closes connections through.

use super::table::Spec;
use granola_net::park::ConnWaker;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What `CLIENT LIST` / `CLIENT INFO` show of a connection.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    /// `CLIENT ID`.
    pub id: u64,
    /// Peer address.
    pub addr: String,
    /// The local address the peer connected to (empty if unknown).
    pub laddr: String,
    /// The socket's file descriptor.
    pub fd: i32,
    /// `CLIENT SETNAME`.
    pub name: Vec<u8>,
    /// Selected database.
    pub db: u8,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Vec<u8>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Vec<u8>,
    /// RESP version (2 or 3).
    pub resp: u8,
    /// Client tracking's redirect: -1 not tracking, 0 none, else the id.
    pub redir: i64,
    /// In RESP2's subscribed mode (`flags=P`, `CLIENT KILL TYPE pubsub`).
    pub pubsub: bool,
    /// Tracking in broadcasting mode (`flags=B`).
    pub bcast: bool,
    /// `CLIENT NO-EVICT ON` (`flags=e`).
    pub no_evict: bool,
    /// `CLIENT NO-TOUCH ON` (`flags=T`): its reads leave items' use marks
    /// alone, but for TOUCH.
    pub no_touch: bool,
    /// Channels, patterns and shard channels subscribed to.
    pub subscriptions: [usize; 3],
    /// When it connected.
    pub since: Instant,
}

impl ClientInfo {
    /// One `CLIENT LIST` line (Redis' field order, the fields granola-kv
    /// knows; the others at their idle values), with what `handle` says
    /// it last did as of `now_s`.
    pub fn line(&self, handle: &Handle, now_s: u64) -> String {
        let age = self.since.elapsed().as_secs();
        let last = handle.last_active_s.load(Ordering::Relaxed);
        let idle = if last == 0 {
            age
        } else {
            now_s.saturating_sub(last)
        };
        let command = handle.last_command();
        let multi = handle.multi.load(Ordering::Relaxed) as i64 - 1;
        let watch = handle.watch.load(Ordering::Relaxed);
        let [sub, psub, ssub] = self.subscriptions;
        // Redis's letters, in its order.
        let mut flags = String::new();
        for (on, letter) in [
            (self.pubsub, 'P'),
            (multi >= 0, 'x'),
            (self.redir >= 0, 't'),
            (self.bcast, 'B'),
            (self.no_evict, 'e'),
            (self.no_touch, 'T'),
        ] {
            if on {
                flags.push(letter);
            }
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={} fd={} name={} age={age} idle={idle} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi={multi} watch={watch} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={command} user=default redir={} resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            String::from_utf8_lossy(&self.name),
            self.db,
            self.redir,
            self.resp,
            String::from_utf8_lossy(&self.lib_name),
            String::from_utf8_lossy(&self.lib_ver),
        )
    }
}

/// What other connections reach this one by: how `CLIENT KILL` closes
/// it (a flag its session checks between requests, and its waker, so an
/// idle connection runs to see it), and what `CLIENT LIST` shows of what
/// it last did (written by its own session at every command: relaxed
/// atomics, no lock on the command path).
#[derive(Default)]
pub struct Handle {
    killed: AtomicBool,
    waker: OnceLock<ConnWaker>,
    /// The last command's table entry, by address (0: none yet).
    last_command: AtomicUsize,
    /// When it last ran a command (coarse Unix seconds; 0: never).
    last_active_s: AtomicU64,
    /// Commands queued in its MULTI, plus one (0: not in MULTI).
    multi: AtomicU64,
    /// Keys it WATCHes.
    watch: AtomicU64,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("killed", &self.killed())
            .finish()
    }
}

impl Handle {
    /// Notes that `spec` ran at `now_s`.
    #[inline]
    pub fn ran(&self, spec: &'static Spec, now_s: u64) {
        self.last_command
            .store(spec as *const Spec as usize, Ordering::Relaxed);
        self.last_active_s.store(now_s, Ordering::Relaxed);
    }

    /// Notes its transaction's state: commands queued (`None`: not in
    /// MULTI) and keys watched.
    pub fn transaction(&self, queued: Option<usize>, watched: usize) {
        self.multi
            .store(queued.map_or(0, |n| n as u64 + 1), Ordering::Relaxed);
        self.watch.store(watched as u64, Ordering::Relaxed);
    }

    /// The last command's name (`NULL` before the first, as Redis shows).
    fn last_command(&self) -> &'static str {
        let at = self.last_command.load(Ordering::Relaxed);
        super::table::all()
            .find(|s| std::ptr::eq(*s, at as *const Spec))
            .map_or("NULL", |s| s.name)
    }

    /// True once a `CLIENT KILL` chose this connection.
    #[inline]
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    /// The connection's waker (set when it is accepted).
    pub fn set_waker(&self, waker: &ConnWaker) {
        if self.waker.get().is_none() {
            let _ = self.waker.set(waker.clone());
        }
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        self.wake();
    }

    /// Runs the connection's session (to see a kill, or a pause's end).
    fn wake(&self) {
        if let Some(w) = self.waker.get() {
            w.wake();
        }
    }
}

/// What `CLIENT PAUSE` holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that write (or may: scripts, PUBLISH, a writing EXEC).
    Write,
    /// Every command.
    All,
}

struct Entry {
    info: ClientInfo,
    handle: Arc<Handle>,
}

/// One server's connections by id.
#[derive(Default)]
pub struct Registry {
    map: Mutex<BTreeMap<u64, Entry>>,
    /// `CLIENT PAUSE`: until when, and what. `pausing` lets every command
    /// check for a pause with one load.
    pause: Mutex<Option<(Instant, PauseMode)>>,
    pausing: AtomicBool,
    /// memcached and native connections a pause holds back (they are not
    /// in `map`): `CLIENT UNPAUSE` runs them at once.
    held: Mutex<Vec<ConnWaker>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("clients", &self.lock().len())
            .finish()
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records (or updates) a connection.
    pub fn register(&self, info: &ClientInfo, handle: &Arc<Handle>) {
        self.lock().insert(
            info.id,
            Entry {
                info: info.clone(),
                handle: handle.clone(),
            },
        );
    }

    /// Forgets a connection.
    pub fn unregister(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Whether connection `id` is open.
    pub fn exists(&self, id: u64) -> bool {
        self.lock().contains_key(&id)
    }

    /// The `CLIENT LIST` lines of the connections `keep` chooses.
    pub fn list(&self, now_s: u64, keep: impl Fn(u64, &ClientInfo) -> bool) -> String {
        self.lock()
            .iter()
            // A killed connection is gone to its clients (it closes
            // before it runs another command).
            .filter(|(id, e)| !e.handle.killed() && keep(**id, &e.info))
            .map(|(_, e)| e.info.line(&e.handle, now_s))
            .collect()
    }

    /// `CLIENT PAUSE`: holds back `mode`'s commands until `until`. A pause
    /// already running keeps the later end and the wider mode, as Redis's
    /// does.
    pub fn pause(&self, until: Instant, mode: PauseMode) {
        let mut p = self.pause.lock().unwrap_or_else(|e| e.into_inner());
        *p = Some(match *p {
            Some((end, m)) if end > Instant::now() => (end.max(until), m.max(mode)),
            // None, or one that has ended (cleared lazily by `paused`).
            _ => (until, mode),
        });
        self.pausing.store(true, Ordering::Release);
    }

    /// `CLIENT UNPAUSE`: ends a pause and runs every connection, so those
    /// held back go on at once.
    pub fn unpause(&self) {
        *self.pause.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.pausing.store(false, Ordering::Release);
        for e in self.lock().values() {
            e.handle.wake();
        }
        for w in self.take_held() {
            w.wake();
        }
    }

    fn take_held(&self) -> Vec<ConnWaker> {
        std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// For the memcached and native protocols: `Some(end)` if a pause
    /// holds back a request now (`writes`, asked only during a pause,
    /// tells if it writes). The connection, parked till `end`, is woken
    /// by `CLIENT UNPAUSE` too.
    pub fn hold_back(&self, writes: impl FnOnce() -> bool, waker: &ConnWaker) -> Option<Instant> {
        let end = self.paused(writes)?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(waker.clone());
        Some(end)
    }

    /// When a command may run: `None` now, else the end of the pause
    /// holding it back. `writes` (asked only during a pause) tells if it
    /// writes.
    #[inline]
    pub fn paused(&self, writes: impl FnOnce() -> bool) -> Option<Instant> {
        if !self.pausing.load(Ordering::Acquire) {
            return None;
        }
        let mut p = self.pause.lock().unwrap_or_else(|e| e.into_inner());
        match *p {
            Some((end, _)) if end <= Instant::now() => {
                *p = None;
                self.pausing.store(false, Ordering::Release);
                // Those held back run by their own deadline.
                drop(self.take_held());
                None
            }
            Some((end, PauseMode::All)) => Some(end),
            Some((end, PauseMode::Write)) if writes() => Some(end),
            _ => None,
        }
    }

    /// Closes every connection `filter` matches; how many.
    pub fn kill(&self, filter: &KillFilter) -> usize {
        let list = self.lock();
        let mut n = 0;
        for (id, e) in list.iter() {
            if !e.handle.killed() && filter.matches(*id, &e.info) {
                e.handle.kill();
                n += 1;
            }
        }
        n
    }
}

/// Which connections a `CLIENT KILL` closes.
#[derive(Debug, Default)]
pub struct KillFilter {
    /// `ID`.
    pub id: Option<u64>,
    /// `ADDR ip:port`.
    pub addr: Option<String>,
    /// `LADDR ip:port`: the local address connected to.
    pub laddr: Option<String>,
    /// `TYPE normal | pubsub` (`Some(true)`: pubsub); `master`, `replica`
    /// and `slave` match no one here (`Some(None)`).
    pub pubsub: Option<Option<bool>>,
    /// `MAXAGE`: connected for more than this many seconds.
    pub max_age: Option<u64>,
    /// `SKIPME no` clears it: the killing connection itself may match.
    pub skip: Option<u64>,
}

impl KillFilter {
    fn matches(&self, id: u64, info: &ClientInfo) -> bool {
        self.id.is_none_or(|x| x == id)
            && self.addr.as_ref().is_none_or(|a| *a == info.addr)
            && self.laddr.as_ref().is_none_or(|a| *a == info.laddr)
            && self.pubsub.is_none_or(|t| t == Some(info.pubsub))
            && self
                .max_age
                .is_none_or(|m| info.since.elapsed().as_secs() > m)
            && self.skip != Some(id)
    }
}
