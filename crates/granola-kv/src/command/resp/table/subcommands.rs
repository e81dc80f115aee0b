//! The containers' subcommands (`CLIENT KILL`, `OBJECT ENCODING`...): one
//! list per container, each row a command of its own named
//! `container|sub`, with Redis 7's arity, flags and key positions.

use super::*;

/// `ACL`'s subcommands.
pub(super) static ACL_SUBS: &[Spec] = &[
    sub!("server", "acl|cat", -2, SUB_CONN, NOKEY, acl::acl),
    sub!("server", "acl|deluser", -3, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|dryrun", -4, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|genpass", -2, SUB_CONN, NOKEY, acl::acl),
    sub!("server", "acl|getuser", 3, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|help", 2, SUB_HELP, NOKEY, acl::acl),
    sub!("server", "acl|list", 2, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|load", 2, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|log", -2, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|save", 2, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|setuser", -3, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|users", 2, SUB_ADMIN, NOKEY, acl::acl),
    sub!("server", "acl|whoami", 2, SUB_CONN, NOKEY, acl::acl),
];

/// `CLIENT`'s subcommands.
pub(super) static CLIENT_SUBS: &[Spec] = &[
    sub!(
        "connection",
        "client|caching",
        3,
        SUB_CONN,
        NOKEY,
        tracking::caching
    ),
    sub!(
        "connection",
        "client|getname",
        2,
        SUB_CONN,
        NOKEY,
        client::getname
    ),
    sub!(
        "connection",
        "client|getredir",
        2,
        SUB_CONN,
        NOKEY,
        tracking::getredir
    ),
    sub!(
        "connection",
        "client|help",
        2,
        SUB_HELP,
        NOKEY,
        client::help
    ),
    sub!("connection", "client|id", 2, SUB_CONN, NOKEY, client::id),
    sub!(
        "connection",
        "client|info",
        2,
        SUB_CONN,
        NOKEY,
        client::info
    ),
    sub!(
        "connection",
        "client|kill",
        -3,
        SUB_ADMIN,
        NOKEY,
        client::kill
    ),
    sub!(
        "connection",
        "client|list",
        -2,
        SUB_ADMIN,
        NOKEY,
        client::list
    ),
    sub!(
        "connection",
        "client|no-evict",
        3,
        SUB_ADMIN,
        NOKEY,
        client::no_evict
    ),
    sub!(
        "connection",
        "client|no-touch",
        3,
        SUB_CONN,
        NOKEY,
        client::no_touch
    ),
    sub!(
        "connection",
        "client|pause",
        -3,
        SUB_ADMIN,
        NOKEY,
        client::pause
    ),
    sub!(
        "connection",
        "client|reply",
        3,
        SUB_CONN,
        NOKEY,
        client::reply
    ),
    sub!(
        "connection",
        "client|setinfo",
        4,
        SUB_CONN,
        NOKEY,
        client::setinfo
    ),
    sub!(
        "connection",
        "client|setname",
        3,
        SUB_CONN,
        NOKEY,
        client::setname
    ),
    sub!(
        "connection",
        "client|tracking",
        -3,
        SUB_CONN,
        NOKEY,
        tracking::tracking
    ),
    sub!(
        "connection",
        "client|trackinginfo",
        2,
        SUB_CONN,
        NOKEY,
        tracking::tracking_info
    ),
    sub!(
        "connection",
        "client|unblock",
        -3,
        SUB_ADMIN,
        NOKEY,
        client::unblock
    ),
    sub!(
        "connection",
        "client|unpause",
        2,
        SUB_ADMIN,
        NOKEY,
        client::unpause
    ),
];

/// `CLUSTER`'s subcommands.
pub(super) static CLUSTER_SUBS: &[Spec] = &[
    sub!(
        "cluster",
        "cluster|addslots",
        -3,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|addslotsrange",
        -4,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|bumpepoch",
        2,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|count-failure-reports",
        3,
        &["admin", "stale"],
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|countkeysinslot",
        3,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|delslots",
        -3,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|delslotsrange",
        -4,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|failover",
        -2,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|flushslots",
        2,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|forget",
        3,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|getkeysinslot",
        4,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|help",
        2,
        SUB_HELP,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|info",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|keyslot",
        3,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|links",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|meet",
        -4,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|myid",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|nodes",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|replicas",
        3,
        &["admin", "stale"],
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|replicate",
        3,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|reset",
        -2,
        &["admin", "noscript", "stale"],
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|saveconfig",
        2,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|set-config-epoch",
        3,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|setslot",
        -4,
        CLUSTER_ADMIN,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|shards",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|slaves",
        3,
        &["admin", "stale"],
        NOKEY,
        standalone::cluster
    ),
    sub!(
        "cluster",
        "cluster|slots",
        2,
        STALE,
        NOKEY,
        standalone::cluster
    ),
];

/// `COMMAND`'s subcommands.
pub(super) static COMMAND_SUBS: &[Spec] = &[
    sub!(
        "server",
        "command|count",
        2,
        SUB_HELP,
        NOKEY,
        server::command_count
    ),
    sub!(
        "server",
        "command|docs",
        -2,
        SUB_HELP,
        NOKEY,
        server::command_docs
    ),
    sub!(
        "server",
        "command|getkeys",
        -4,
        SUB_HELP,
        NOKEY,
        server::command_getkeys
    ),
    sub!(
        "server",
        "command|getkeysandflags",
        -4,
        SUB_HELP,
        NOKEY,
        server::command_getkeysandflags
    ),
    sub!(
        "server",
        "command|help",
        2,
        SUB_HELP,
        NOKEY,
        server::command_help
    ),
    sub!(
        "server",
        "command|info",
        -2,
        SUB_HELP,
        NOKEY,
        server::command_info
    ),
    sub!(
        "server",
        "command|list",
        -2,
        SUB_HELP,
        NOKEY,
        server::command_list
    ),
];

/// `CONFIG`'s subcommands.
pub(super) static CONFIG_SUBS: &[Spec] = &[
    sub!("server", "config|get", -3, SUB_ADMIN, NOKEY, server::config),
    sub!("server", "config|help", 2, SUB_HELP, NOKEY, server::config),
    sub!(
        "server",
        "config|resetstat",
        2,
        SUB_ADMIN,
        NOKEY,
        server::config
    ),
    sub!(
        "server",
        "config|rewrite",
        2,
        SUB_ADMIN,
        NOKEY,
        server::config
    ),
    sub!("server", "config|set", -4, SUB_ADMIN, NOKEY, server::config),
];

/// `FUNCTION`'s subcommands.
pub(super) static FUNCTION_SUBS: &[Spec] = &[
    sub!(
        "scripting",
        "function|delete",
        3,
        &["write", "noscript"],
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|dump",
        2,
        SC,
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|flush",
        -2,
        &["write", "noscript"],
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|help",
        2,
        SUB_HELP,
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|kill",
        2,
        &["noscript", "allow_busy"],
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|list",
        -2,
        SC,
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|load",
        -3,
        &["write", "denyoom", "noscript"],
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|restore",
        -3,
        &["write", "denyoom", "noscript"],
        NOKEY,
        functions::function
    ),
    sub!(
        "scripting",
        "function|stats",
        2,
        &["noscript", "allow_busy"],
        NOKEY,
        functions::function
    ),
];

/// `LATENCY`'s subcommands.
pub(super) static LATENCY_SUBS: &[Spec] = &[
    sub!(
        "server",
        "latency|doctor",
        2,
        SUB_ADMIN,
        NOKEY,
        latency::doctor
    ),
    sub!(
        "server",
        "latency|graph",
        3,
        SUB_ADMIN,
        NOKEY,
        latency::graph
    ),
    sub!("server", "latency|help", 2, SUB_HELP, NOKEY, latency::help),
    sub!(
        "server",
        "latency|histogram",
        -2,
        SUB_ADMIN,
        NOKEY,
        latency::histogram
    ),
    sub!(
        "server",
        "latency|history",
        3,
        SUB_ADMIN,
        NOKEY,
        latency::history
    ),
    sub!(
        "server",
        "latency|latest",
        2,
        SUB_ADMIN,
        NOKEY,
        latency::latest
    ),
    sub!(
        "server",
        "latency|reset",
        -2,
        SUB_ADMIN,
        NOKEY,
        latency::reset
    ),
];

/// `MEMORY`'s subcommands.
pub(super) static MEMORY_SUBS: &[Spec] = &[
    sub!("server", "memory|doctor", 2, &[], NOKEY, memory::doctor),
    sub!("server", "memory|help", 2, SUB_HELP, NOKEY, memory::help),
    sub!(
        "server",
        "memory|malloc-stats",
        2,
        &[],
        NOKEY,
        memory::malloc_stats
    ),
    sub!("server", "memory|purge", 2, &[], NOKEY, memory::purge),
    sub!("server", "memory|stats", 2, &[], NOKEY, memory::stats),
    sub!("server", "memory|usage", -3, RS, KEY2, memory::usage),
];

/// `MODULE`'s subcommands.
pub(super) static MODULE_SUBS: &[Spec] = &[
    sub!("server", "module|help", 2, SUB_HELP, NOKEY, modules::help),
    sub!(
        "server",
        "module|list",
        2,
        &["admin", "noscript"],
        NOKEY,
        modules::list
    ),
    sub!(
        "server",
        "module|load",
        -3,
        MODULE_LOAD,
        NOKEY,
        modules::load
    ),
    sub!(
        "server",
        "module|loadex",
        -3,
        MODULE_LOAD,
        NOKEY,
        modules::load
    ),
    sub!(
        "server",
        "module|unload",
        3,
        MODULE_LOAD,
        NOKEY,
        modules::unload
    ),
];

/// `OBJECT`'s subcommands.
pub(super) static OBJECT_SUBS: &[Spec] = &[
    sub!("generic", "object|encoding", 3, RS, KEY2, keys::object),
    sub!("generic", "object|freq", 3, RS, KEY2, keys::object),
    sub!("generic", "object|help", 2, SUB_HELP, NOKEY, keys::object),
    sub!("generic", "object|idletime", 3, RS, KEY2, keys::object),
    sub!("generic", "object|refcount", 3, RS, KEY2, keys::object),
];

/// `PUBSUB`'s subcommands.
pub(super) static PUBSUB_SUBS: &[Spec] = &[
    sub!(
        "pubsub",
        "pubsub|channels",
        -2,
        PUBSUB_INFO,
        NOKEY,
        pubsub::pubsub
    ),
    sub!("pubsub", "pubsub|help", 2, SUB_HELP, NOKEY, pubsub::pubsub),
    sub!(
        "pubsub",
        "pubsub|numpat",
        2,
        PUBSUB_INFO,
        NOKEY,
        pubsub::pubsub
    ),
    sub!(
        "pubsub",
        "pubsub|numsub",
        -2,
        PUBSUB_INFO,
        NOKEY,
        pubsub::pubsub
    ),
    sub!(
        "pubsub",
        "pubsub|shardchannels",
        -2,
        PUBSUB_INFO,
        NOKEY,
        pubsub::pubsub
    ),
    sub!(
        "pubsub",
        "pubsub|shardnumsub",
        -2,
        PUBSUB_INFO,
        NOKEY,
        pubsub::pubsub
    ),
];

/// `SCRIPT`'s subcommands.
pub(super) static SCRIPT_SUBS: &[Spec] = &[
    sub!("scripting", "script|debug", 3, SC, NOKEY, scripting::script),
    sub!(
        "scripting",
        "script|exists",
        -3,
        SC,
        NOKEY,
        scripting::script
    ),
    sub!(
        "scripting",
        "script|flush",
        -2,
        SC,
        NOKEY,
        scripting::script
    ),
    sub!(
        "scripting",
        "script|help",
        2,
        SUB_HELP,
        NOKEY,
        scripting::script
    ),
    sub!(
        "scripting",
        "script|kill",
        2,
        &["noscript", "allow_busy"],
        NOKEY,
        scripting::script
    ),
    sub!(
        "scripting",
        "script|load",
        3,
        &["noscript", "stale"],
        NOKEY,
        scripting::script
    ),
];

/// `SLOWLOG`'s subcommands.
pub(super) static SLOWLOG_SUBS: &[Spec] = &[
    sub!("server", "slowlog|get", -2, A, NOKEY, server::slowlog),
    sub!(
        "server",
        "slowlog|help",
        2,
        SUB_HELP,
        NOKEY,
        server::slowlog
    ),
    sub!("server", "slowlog|len", 2, A, NOKEY, server::slowlog),
    sub!("server", "slowlog|reset", 2, A, NOKEY, server::slowlog),
];

/// `XGROUP`'s subcommands.
pub(super) static XGROUP_SUBS: &[Spec] = &[
    sub!(
        "stream",
        "xgroup|create",
        -5,
        WS,
        KEY2,
        stream_groups::xgroup
    ),
    sub!(
        "stream",
        "xgroup|createconsumer",
        5,
        WS,
        KEY2,
        stream_groups::xgroup
    ),
    sub!(
        "stream",
        "xgroup|delconsumer",
        5,
        WD,
        KEY2,
        stream_groups::xgroup
    ),
    sub!(
        "stream",
        "xgroup|destroy",
        4,
        WD,
        KEY2,
        stream_groups::xgroup
    ),
    sub!(
        "stream",
        "xgroup|help",
        2,
        SUB_HELP,
        NOKEY,
        stream_groups::xgroup
    ),
    sub!(
        "stream",
        "xgroup|setid",
        -5,
        WD,
        KEY2,
        stream_groups::xgroup
    ),
];

/// `XINFO`'s subcommands.
pub(super) static XINFO_SUBS: &[Spec] = &[
    sub!("stream", "xinfo|consumers", 4, RS, KEY2, streams::xinfo),
    sub!("stream", "xinfo|groups", 3, RS, KEY2, streams::xinfo),
    sub!("stream", "xinfo|help", 2, SUB_HELP, NOKEY, streams::xinfo),
    sub!("stream", "xinfo|stream", -3, RS, KEY2, streams::xinfo),
];
