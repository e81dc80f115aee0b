//! [`WorkloadSpec`]: a workload by name and parameters, from a string.
//!
//! ```text
//! ycsb[:keys=N,zipf=S,value=BYTES,key_len=N,shape=single|multi:K|list:K|vector:K]
//! google[:keys=N,list=A-B,max_total=BYTES,zipf=S]
//! twitter[:file=PATH,max_keys=N,split=BYTES]          (a trace file)
//! twitter[:keys=N,large_frac=F,put_frac=F,zipf=S,split=BYTES]   (synthetic)
//! cdn[:objects=N,mean=BYTES,max=BYTES,sub=BYTES,zipf=S]
//! fb:pool=etc|usr|app|var|sys[,keys=N,zipf=S]         (or just etc, usr, …)
//! echo[:shape=1k|2x2048|64k]
//! ```
//!
//! Sizes accept `k`/`m` suffixes (powers of 1024); counts accept `k`/`m`
//! (powers of 1000).

use std::collections::BTreeMap;

use super::cdn::{Cdn, CdnConfig};
use super::echo::{Echo, EchoConfig};
use super::facebook::{Facebook, FacebookConfig, Pool};
use super::google::{Google, GoogleConfig};
use super::twitter::{SynthConfig, Trace, TraceReplay, TwitterSynth, DEFAULT_SPLIT};
use super::ycsb::{Ycsb, YcsbConfig};
use super::{Shape, Workload};
use crate::load::{parse_count, parse_size};

/// A parsed workload description; [`build`](Self::build) makes the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Workload name.
    pub name: String,
    /// Parameters in the order given.
    pub params: BTreeMap<String, String>,
}

impl std::str::FromStr for WorkloadSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<WorkloadSpec, String> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let mut params = BTreeMap::new();
        for kv in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("workload parameter {kv:?} is not key=value"))?;
            params.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        let name = name.trim().to_ascii_lowercase();
        // Pool names stand for fb:pool=NAME.
        if Pool::parse(&name).is_ok() {
            params.insert("pool".into(), name);
            return Ok(WorkloadSpec {
                name: "fb".into(),
                params,
            });
        }
        Ok(WorkloadSpec { name, params })
    }
}

impl std::fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        for (i, (k, v)) in self.params.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

struct Params<'a> {
    map: &'a BTreeMap<String, String>,
    used: Vec<&'a str>,
}

impl<'a> Params<'a> {
    fn get(&mut self, k: &'a str) -> Option<&'a str> {
        self.used.push(k);
        self.map.get(k).map(String::as_str)
    }

    fn count(&mut self, k: &'a str, default: u64) -> Result<u64, String> {
        self.get(k)
            .map_or(Ok(default), |v| parse_count(v).map(|x| x as u64))
    }

    fn size(&mut self, k: &'a str, default: u32) -> Result<u32, String> {
        self.get(k).map_or(Ok(default), parse_size)
    }

    fn float(&mut self, k: &'a str, default: f64) -> Result<f64, String> {
        self.get(k).map_or(Ok(default), |v| {
            v.parse().map_err(|e| format!("{k}={v}: {e}"))
        })
    }

    fn finish(self, name: &str) -> Result<(), String> {
        for k in self.map.keys() {
            if !self.used.contains(&k.as_str()) {
                return Err(format!("workload {name}: unknown parameter {k:?}"));
            }
        }
        Ok(())
    }
}

impl WorkloadSpec {
    /// Builds the workload; `seed` seeds size draws that have no `seed=`.
    pub fn build(&self) -> Result<Box<dyn Workload>, String> {
        let mut p = Params {
            map: &self.params,
            used: Vec::new(),
        };
        let w: Box<dyn Workload> = match self.name.as_str() {
            "ycsb" => {
                let d = YcsbConfig::default();
                let cfg = YcsbConfig {
                    keys: p.count("keys", d.keys)?,
                    zipf: p.float("zipf", d.zipf)?,
                    value: p.size("value", d.value)?,
                    key_len: p.size("key_len", u32::from(d.key_len))?.min(250) as u16,
                    shape: p.get("shape").map_or(Ok(d.shape), Shape::parse)?,
                };
                Box::new(Ycsb::new(cfg)?)
            }
            "google" => {
                let d = GoogleConfig::default();
                let (min_len, max_len) = match p.get("list") {
                    None => (d.min_len, d.max_len),
                    Some(l) => {
                        let (a, b) = l.split_once('-').unwrap_or((l, l));
                        let a = a.parse::<u32>().map_err(|e| format!("list={l}: {e}"))?;
                        let b = b.parse::<u32>().map_err(|e| format!("list={l}: {e}"))?;
                        (a, b)
                    }
                };
                let cfg = GoogleConfig {
                    keys: p.count("keys", d.keys)?,
                    min_len,
                    max_len,
                    max_total: p.size("max_total", d.max_total)?,
                    zipf: p.float("zipf", d.zipf)?,
                    key_len: p.size("key_len", u32::from(d.key_len))?.min(250) as u16,
                    seed: p.count("seed", d.seed)?,
                };
                Box::new(Google::new(cfg)?)
            }
            "twitter" => {
                let split = p.size("split", DEFAULT_SPLIT)?;
                if let Some(file) = p.get("file") {
                    let max_keys = p.count("max_keys", 4_000_000)? as usize;
                    let trace = Trace::from_file(std::path::Path::new(file), max_keys)?;
                    Box::new(TraceReplay::new(trace, split, file.to_owned())?)
                } else {
                    let d = SynthConfig::default();
                    let cfg = SynthConfig {
                        keys: p.count("keys", d.keys)?,
                        large_frac: p.float("large_frac", d.large_frac)?,
                        put_frac: p.float("put_frac", d.put_frac)?,
                        zipf: p.float("zipf", d.zipf)?,
                        split,
                        seed: p.count("seed", d.seed)?,
                    };
                    Box::new(TwitterSynth::new(cfg)?)
                }
            }
            "cdn" => {
                let d = CdnConfig::default();
                let cfg = CdnConfig {
                    objects: p.count("objects", d.objects)?,
                    min: f64::from(p.size("min", d.min as u32)?),
                    max: f64::from(p.size("max", d.max as u32)?),
                    mean: f64::from(p.size("mean", d.mean as u32)?),
                    sub: p.size("sub", d.sub)?,
                    zipf: p.float("zipf", d.zipf)?,
                    key_len: p.size("key_len", u32::from(d.key_len))?.min(250) as u16,
                    seed: p.count("seed", d.seed)?,
                };
                Box::new(Cdn::new(cfg)?)
            }
            "fb" | "facebook" => {
                let d = FacebookConfig::default();
                let cfg = FacebookConfig {
                    pool: p.get("pool").map_or(Ok(d.pool), Pool::parse)?,
                    keys: p.count("keys", d.keys)?,
                    zipf: p.float("zipf", d.zipf)?,
                    seed: p.count("seed", d.seed)?,
                };
                Box::new(Facebook::new(cfg)?)
            }
            "echo" => {
                let cfg = p.get("shape").map_or(Ok(EchoConfig::default()), EchoConfig::parse)?;
                Box::new(Echo::new(cfg)?)
            }
            other => {
                return Err(format!(
                    "unknown workload {other:?} (ycsb, google, twitter, cdn, fb/etc/usr/app/var/sys, echo)"
                ))
            }
        };
        p.finish(&self.name)?;
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_build() {
        let s: WorkloadSpec = "ycsb:keys=1k,value=4k,shape=list:2".parse().unwrap();
        assert_eq!(s.name, "ycsb");
        let w = s.build().unwrap();
        assert_eq!(w.load_count(), 1000);
        assert!(w.describe().contains("shape=list:2"), "{}", w.describe());
        assert_eq!(s.to_string(), "ycsb:keys=1k,shape=list:2,value=4k");

        let s: WorkloadSpec = "etc:keys=10".parse().unwrap();
        assert_eq!(s.name, "fb");
        assert!(s.build().unwrap().describe().starts_with("fb:pool=etc"));
        for ok in [
            "google:list=1-16",
            "twitter",
            "cdn:objects=5",
            "echo:shape=2x2048",
            "usr",
        ] {
            ok.parse::<WorkloadSpec>()
                .unwrap()
                .build()
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in ["ycsb:nope=1", "nothing", "ycsb:keys", "google:list=5-2"] {
            let r = bad
                .parse::<WorkloadSpec>()
                .and_then(|s| s.build().map(|_| ()));
            assert!(r.is_err(), "{bad} should fail");
        }
    }
}
