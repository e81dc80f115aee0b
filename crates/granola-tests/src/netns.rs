//! Network namespaces joined by a veth pair, for tests of datapaths that
//! need a real link (AF_XDP): created with iproute2, deleted on drop (also
//! when the test panics), traffic only between the two namespaces.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// True when `GRANOLA_REQUIRE_PEERS` is set: a capability that was expected
/// must not be skipped.
pub fn require_peers() -> bool {
    std::env::var_os("GRANOLA_REQUIRE_PEERS").is_some()
}

/// True when running as root (namespaces are then expected to work).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Two namespaces and a veth pair between them (server end, client end),
/// addressed 10.211.N.1/24 and 10.211.N.2/24; deleted on drop.
pub struct Veth {
    /// Namespace of the server end.
    pub server_ns: String,
    /// Namespace of the client end.
    pub client_ns: String,
    /// The server end's interface name.
    pub server_if: String,
    /// The client end's interface name.
    pub client_if: String,
    /// The server end's address.
    pub server_ip: String,
    /// The client end's address.
    pub client_ip: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Veth {
    /// Creates the pair for a test of `what`; where that is not possible,
    /// says so on stderr (`SKIPPED: ...`) and returns `None`, except that
    /// under `GRANOLA_REQUIRE_PEERS` a root run fails (namespaces are then
    /// expected to work).
    pub fn create_or_skip(what: &str) -> Option<Veth> {
        match Veth::create() {
            Ok(v) => Some(v),
            Err(e) => {
                if require_peers() && is_root() {
                    panic!("GRANOLA_REQUIRE_PEERS: cannot create namespaces as root: {e}");
                }
                eprintln!("SKIPPED: {what} needs network namespaces: {e}");
                None
            }
        }
    }

    /// Creates the pair; `Err` says why it could not.
    pub fn create() -> Result<Veth, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id() % 100_000;
        let tag = format!("{pid}{n}");
        let v = Veth {
            server_ns: format!("gxs{tag}"),
            client_ns: format!("gxc{tag}"),
            server_if: format!("gxs{tag}"),
            client_if: format!("gxc{tag}"),
            // Spread over the third octet by pid too, so two test binaries
            // running at once do not share a subnet (they are in separate
            // namespaces anyway).
            server_ip: format!("10.211.{}.1", (pid as u32 * 7 + n) % 250),
            client_ip: format!("10.211.{}.2", (pid as u32 * 7 + n) % 250),
        };
        ip(&["netns", "add", &v.server_ns])?;
        // From here on Drop removes what exists.
        ip(&["netns", "add", &v.client_ns])?;
        ip(&[
            "link",
            "add",
            &v.server_if,
            "netns",
            &v.server_ns,
            // One queue per end: the AF_XDP socket binds queue 0, and a
            // veth picks the receive queue from the sender's CPU.
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            &v.client_if,
            "netns",
            &v.client_ns,
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
        ])?;
        for (ns, dev, addr) in [
            (&v.server_ns, &v.server_if, &v.server_ip),
            (&v.client_ns, &v.client_if, &v.client_ip),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(v)
    }

    /// Runs `f` on a thread inside namespace `ns` (threads it spawns and
    /// sockets it creates stay there); `enter` is the setns call
    /// (`granola_net::xdp::enter_netns`).
    pub fn in_ns<T: Send>(
        ns: &str,
        enter: fn(BorrowedFd<'_>) -> std::io::Result<()>,
        f: impl FnOnce() -> T + Send,
    ) -> T {
        std::thread::scope(|s| {
            s.spawn(|| {
                let file = File::open(format!("/run/netns/{ns}")).expect("netns file");
                enter(file.as_fd()).expect("setns");
                f()
            })
            .join()
            .expect("namespace thread panicked")
        })
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth, and so the pair.
        let _ = ip(&["netns", "del", &self.server_ns]);
        let _ = ip(&["netns", "del", &self.client_ns]);
    }
}
