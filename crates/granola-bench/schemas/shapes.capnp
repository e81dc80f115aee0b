# Cap'n Proto equivalent of shapes.proto (granola-bench).
# Generated Rust code is checked in at src/ser/gen/shapes_capnp.rs;
# regenerate with bench/regen-baselines.sh (needs Debian's capnproto and
# capnpc-rust from the capnpc crate).
@0x94f491708c1b2e1f;

struct StringMsg {
  value @0 :Text;
}

struct IdPair {
  id @0 :UInt32;
  first @1 :Data;
  second @2 :Data;
}

struct ValueList {
  values @0 :List(Data);
}

struct KeyValues {
  keys @0 :List(Data);
  values @1 :List(Data);
}

struct Blob {
  data @0 :Data;
}
