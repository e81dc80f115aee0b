//! Who is connected: the registry `CLIENT LIST` reads and `CLIENT KILL`
//! closes connections through.

use granola_net::park::ConnWaker;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What `CLIENT LIST` / `CLIENT INFO` show of a connection.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    /// `CLIENT ID`.
    pub id: u64,
    /// Peer address.
    pub addr: String,
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
    /// When it connected.
    pub since: Instant,
}

impl ClientInfo {
    /// One `CLIENT LIST` line (Redis' field order, the fields granola-kv
    /// knows; the others at their idle values).
    pub fn line(&self) -> String {
        format!(
            "id={} addr={} laddr= fd=-1 name={} age={} idle=0 flags={} db={} sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client user=default redir={} resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.addr,
            String::from_utf8_lossy(&self.name),
            self.since.elapsed().as_secs(),
            if self.pubsub { "P" } else { "N" },
            self.db,
            self.redir,
            self.resp,
            String::from_utf8_lossy(&self.lib_name),
            String::from_utf8_lossy(&self.lib_ver),
        )
    }
}

/// How another connection closes this one (`CLIENT KILL`): a flag its
/// session checks between requests, and its waker, so an idle connection
/// runs to see it.
#[derive(Default)]
pub struct Kill {
    killed: AtomicBool,
    waker: OnceLock<ConnWaker>,
}

impl std::fmt::Debug for Kill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kill")
            .field("killed", &self.killed())
            .finish()
    }
}

impl Kill {
    /// True once a `CLIENT KILL` chose this connection.
    #[inline]
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    /// The connection's waker, known from its first request on (a
    /// connection killed before it sent anything closes at its first
    /// request).
    pub fn set_waker(&self, waker: &ConnWaker) {
        if self.waker.get().is_none() {
            let _ = self.waker.set(waker.clone());
        }
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        if let Some(w) = self.waker.get() {
            w.wake();
        }
    }
}

struct Entry {
    info: ClientInfo,
    kill: Arc<Kill>,
}

/// One server's connections by id.
#[derive(Default)]
pub struct Registry {
    map: Mutex<BTreeMap<u64, Entry>>,
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
    pub fn register(&self, info: &ClientInfo, kill: &Arc<Kill>) {
        self.lock().insert(
            info.id,
            Entry {
                info: info.clone(),
                kill: kill.clone(),
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

    /// Every connection's `CLIENT LIST` line.
    pub fn list(&self) -> String {
        self.lock().values().map(|e| e.info.line()).collect()
    }

    /// Closes every connection `filter` matches; how many.
    pub fn kill(&self, filter: &KillFilter) -> usize {
        let list = self.lock();
        let mut n = 0;
        for (id, e) in list.iter() {
            if filter.matches(*id, &e.info) {
                e.kill.kill();
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
            && self.pubsub.is_none_or(|t| t == Some(info.pubsub))
            && self
                .max_age
                .is_none_or(|m| info.since.elapsed().as_secs() > m)
            && self.skip != Some(id)
    }
}
