//! Ports for servers that must be told theirs (child processes, memaslap's
//! UDP mode, which sends to the TCP port's number).

use std::sync::atomic::{AtomicU32, Ordering};

/// A port free for both TCP and UDP on 127.0.0.1, taken below the kernel's
/// ephemeral range (`ip_local_port_range`, 32768-60999 by default): a port
/// from that range can be handed to another test's client socket between
/// this check and the server's bind (it happened: "address already in
/// use"). Each call tries different ports, starting at one derived from the
/// process id, so parallel tests and test binaries do not race for the
/// same one.
pub fn free_tcp_udp_port() -> u16 {
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(97) % SPAN;
    for _ in 0..500 {
        let port = (LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        if tcp.is_ok() && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both TCP and UDP below the ephemeral range");
}
