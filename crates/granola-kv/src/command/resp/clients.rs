//! Who is connected: the registry `CLIENT LIST` reads.

use std::collections::BTreeMap;
use std::sync::Mutex;
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
    /// When it connected.
    pub since: Instant,
}

impl ClientInfo {
    /// One `CLIENT LIST` line (Redis' field order, the fields granola-kv
    /// knows; the others at their idle values).
    pub fn line(&self) -> String {
        format!(
            "id={} addr={} laddr= fd=-1 name={} age={} idle=0 flags=N db={} sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client user=default redir={} resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.addr,
            String::from_utf8_lossy(&self.name),
            self.since.elapsed().as_secs(),
            self.db,
            self.redir,
            self.resp,
            String::from_utf8_lossy(&self.lib_name),
            String::from_utf8_lossy(&self.lib_ver),
        )
    }
}

static CLIENTS: Mutex<BTreeMap<u64, ClientInfo>> = Mutex::new(BTreeMap::new());

fn clients() -> std::sync::MutexGuard<'static, BTreeMap<u64, ClientInfo>> {
    CLIENTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records (or updates) a connection.
pub fn register(info: &ClientInfo) {
    clients().insert(info.id, info.clone());
}

/// Forgets a connection.
pub fn unregister(id: u64) {
    clients().remove(&id);
}

/// Whether connection `id` is open.
pub fn exists(id: u64) -> bool {
    clients().contains_key(&id)
}

/// Every connection's `CLIENT LIST` line.
pub fn list() -> String {
    clients().values().map(ClientInfo::line).collect()
}
