//! memcached's `-o` extended options (`-o idle_timeout=600,modern`): the
//! ones that mean something here take effect, the common ones that tune
//! memcached internals granola-kv does not have are accepted with a log
//! line saying so (so a memcached command line drops in), and anything
//! else is refused with a clear error.

use std::time::Duration;

/// One parsed `-o` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtendedOption {
    /// `idle_timeout=N`: close connections with no input for N seconds
    /// (0 = off).
    IdleTimeout(Duration),
    /// A memcached option with no effect here (its text, for the log).
    NoEffect(String),
}

/// memcached `-o` options accepted without effect: they tune memcached's
/// own hash table, slab mover, LRU threads, logging or privileges.
const NO_EFFECT: &[&str] = &[
    "maxconns_fast",
    "no_maxconns_fast",
    "hashpower",
    "hash_algorithm",
    "tail_repair_time",
    "slab_reassign",
    "no_slab_reassign",
    "slab_automove",
    "no_slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_chunk_max",
    "slab_sizes",
    "lru_crawler",
    "no_lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "lru_maintainer",
    "no_lru_maintainer",
    "lru_segmented",
    "no_lru_segmented",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temporary_ttl",
    "track_sizes",
    "no_inline_ascii_resp",
    "modern",
    "no_modern",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "drop_privileges",
    "no_drop_privileges",
    "read_buf_mem_limit",
    "resp_obj_mem_limit",
    "no_hashexpand",
    "no_chunked_items",
    "large_memory_pages",
    "bind_verbose",
];

/// Parses one comma-separated item of `-o`.
pub fn parse_extended(item: &str) -> Result<ExtendedOption, String> {
    let item = item.trim();
    let (name, value) = match item.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (item, None),
    };
    match name {
        "idle_timeout" => {
            let secs = value
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("-o idle_timeout needs a number of seconds, got {item:?}"))?;
            Ok(ExtendedOption::IdleTimeout(Duration::from_secs(secs)))
        }
        n if NO_EFFECT.contains(&n) => Ok(ExtendedOption::NoEffect(item.to_string())),
        _ => Err(format!(
            "unknown -o option {item:?} (granola-kv takes idle_timeout=N and ignores memcached's tuning options such as modern, hashpower, slab_reassign, lru_crawler)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_timeout_and_known_options_parse_and_nonsense_is_refused() {
        assert_eq!(
            parse_extended("idle_timeout=600"),
            Ok(ExtendedOption::IdleTimeout(Duration::from_secs(600)))
        );
        assert_eq!(
            parse_extended("hashpower=20"),
            Ok(ExtendedOption::NoEffect("hashpower=20".into()))
        );
        assert!(parse_extended("idle_timeout").is_err());
        assert!(parse_extended("idle_timeout=soon").is_err());
        assert!(parse_extended("make_it_fast").is_err());
    }

    #[test]
    fn command_line_takes_memcached_syntax() {
        use crate::server::config::Config;
        use clap::Parser;
        let c = Config::try_parse_from(["granola-kv", "-o", "modern,idle_timeout=5"]).unwrap();
        assert_eq!(c.idle_timeout(), Some(Duration::from_secs(5)));
        let c = Config::try_parse_from(["granola-kv", "--idle-timeout", "7"]).unwrap();
        assert_eq!(c.idle_timeout(), Some(Duration::from_secs(7)));
        let c = Config::try_parse_from(["granola-kv"]).unwrap();
        assert_eq!(c.idle_timeout(), None);
        assert_eq!(c.write_timeout(), Some(Duration::from_secs(30)));
        let c = Config::try_parse_from(["granola-kv", "--write-timeout", "0"]).unwrap();
        assert_eq!(c.write_timeout(), None);
        let e = Config::try_parse_from(["granola-kv", "-o", "idle_timeout=5,bogus"]).unwrap_err();
        assert!(e.to_string().contains("unknown -o option"), "{e}");
    }
}
