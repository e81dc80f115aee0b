//! granola-net: Linux datapaths for granola.
