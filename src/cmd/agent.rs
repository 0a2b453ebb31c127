//! `rocetap agent`: the command line over the config file, into an [`agent::Config`],
//! every value checked by one parser whichever side it came from; then the agent runs.

use crate::cli::AgentArgs;
use rocetap::agent::{self, file, log::LogFormat};
use rocetap::capture::live::Filter;
use rocetap::error::Failure;
use rocetap::report::rules;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where a setting came from, for its error message.
enum From {
    Cli,
    File(PathBuf),
}

/// The options given on the command line, as (config key, values).
fn cli_pairs(a: &AgentArgs) -> Vec<(&'static str, Vec<String>)> {
    let mut v: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut one = |k: &'static str, x: Option<String>| {
        if let Some(x) = x {
            v.push((k, vec![x]));
        }
    };
    one("listen", a.listen.clone());
    one("node_name", a.node_name.clone());
    one("snaplen", a.snaplen.map(|x| x.to_string()));
    one("lanes", a.lanes.map(|x| x.to_string()));
    one("filter", a.filter.clone());
    one("roce_port", a.roce_port.map(|x| x.to_string()));
    one("netcheck_interval", a.netcheck_interval.clone());
    one(
        "dump_dir",
        a.dump_dir.as_ref().map(|p| p.display().to_string()),
    );
    one(
        "qos_from",
        a.qos_from.as_ref().map(|p| p.display().to_string()),
    );
    one("dump_seconds", a.dump_seconds.map(|x| x.to_string()));
    one("dump_interval", a.dump_interval.clone());
    one("dump_keep", a.dump_keep.map(|x| x.to_string()));
    one("recorder_bytes", a.recorder_bytes.clone());
    one(
        "recorder_seconds",
        a.recorder_seconds.map(|x| x.to_string()),
    );
    one("redact", a.redact.clone());
    one("memory_limit", a.memory_limit.clone());
    one("window", a.window.clone());
    one("log_format", a.log_format.clone());
    one("top_flows", a.top_flows.map(|x| x.to_string()));
    one("idle_timeout", a.idle_timeout.clone());
    one("gap_timeout", a.gap_timeout.clone());
    one("link_speed", a.link_speed.map(|x| x.to_string()));
    one(
        "web_config_file",
        a.web_config_file.as_ref().map(|p| p.display().to_string()),
    );
    one("max_connections", a.max_connections.map(|x| x.to_string()));
    one("report", a.report.clone());
    one("max_peers", a.max_peers.map(|x| x.to_string()));
    one(
        "topology",
        a.topology.as_ref().map(|p| p.display().to_string()),
    );
    for (k, list) in [
        ("interface", &a.interfaces),
        ("netcheck_netns", &a.netcheck_netns),
        ("dump_on", &a.dump_on),
        ("qp_table", &a.qp_table),
    ] {
        if !list.is_empty() {
            v.push((k, list.clone()));
        }
    }
    v
}

fn host_name() -> String {
    // bounded, regular files only (`sysfile`), like every procfs read
    rocetap::sysfile::value(std::path::Path::new("/proc/sys/kernel/hostname"))
        .ok()
        .flatten()
        .unwrap_or_else(|| "localhost".into())
}

pub fn run(a: AgentArgs) -> Result<i32, Failure> {
    let cfg = config(&a)?;
    Ok(agent::run(&cfg)?)
}

/// The agent's configuration: defaults, then the file, then the command line.
pub fn config(a: &AgentArgs) -> Result<agent::Config, Failure> {
    let mut settings: Vec<(String, Vec<String>, From)> = Vec::new();
    if let Some(p) = &a.config {
        for (k, v) in file::load(p)? {
            settings.push((k, v, From::File(p.clone())));
        }
    }
    for (k, v) in cli_pairs(a) {
        settings.retain(|(x, _, _)| x != k);
        settings.push((k.to_string(), v, From::Cli));
    }
    let mut cfg = agent::Config::new(Vec::new(), host_name());
    cfg.sysfs_root = a.sysfs_root.clone();
    if let Some(d) = &a.duration {
        cfg.duration = Some(
            file::parse_duration(d).map_err(|e| Failure::new(format!("agent: --duration: {e}")))?,
        );
    }
    let mut roce_port = None;
    let mut filter = None;
    for (k, v, from) in &settings {
        apply(&mut cfg, k, v, &mut roce_port, &mut filter).map_err(|e| match from {
            From::Cli => Failure::new(format!("agent: --{}: {e}", k.replace('_', "-"))),
            From::File(p) => Failure::new(format!("agent: config {}: '{k}': {e}", p.display())),
        })?;
    }
    if let Some(p) = roce_port {
        cfg.decode.roce_port = p;
    }
    cfg.live.filter = match filter {
        Some(f) => Filter::Expr(f),
        None => Filter::Roce {
            port: cfg.decode.roce_port,
        },
    };
    if cfg.interfaces.is_empty() {
        return Err(Failure::new("agent: no source to capture from").hint(
            "give --interface IFACE (repeatable), --interface auto, or `interface:` in --config",
        ));
    }
    if cfg.dump_seconds > cfg.recorder_seconds {
        return Err(Failure::new(format!(
            "agent: --dump-seconds {} is longer than the flight recorder keeps (--recorder-seconds {})",
            cfg.dump_seconds, cfg.recorder_seconds
        )));
    }
    Ok(cfg)
}

fn num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a valid number"))
}

fn apply(
    cfg: &mut agent::Config,
    key: &str,
    v: &[String],
    roce_port: &mut Option<u16>,
    filter: &mut Option<String>,
) -> Result<(), String> {
    let first = v.first().map_or("", String::as_str);
    match key {
        "interface" => cfg.interfaces = v.to_vec(),
        "listen" => cfg.listen = listen_addr(first)?,
        "node_name" => {
            if first.is_empty() || first.len() > 253 {
                return Err("give a name of 1 to 253 characters".into());
            }
            cfg.node = first.to_string();
        }
        "snaplen" => {
            let n: u32 = num(first)?;
            if !(64..=262_144).contains(&n) {
                return Err(format!(
                    "{n}: give 64 to 262144 bytes (128 keeps every RoCE header)"
                ));
            }
            cfg.live.snaplen = n;
        }
        "lanes" => {
            let n: u16 = num(first)?;
            if !(1..=64).contains(&n) {
                return Err(format!("{n}: give 1 to 64 lanes"));
            }
            cfg.live.lanes = n;
        }
        "filter" => *filter = Some(first.to_string()),
        "roce_port" => *roce_port = Some(num(first)?),
        "netcheck_interval" => {
            let d = file::parse_duration(first).map_err(|e| e.to_string())?;
            cfg.netcheck_interval = (!d.is_zero()).then_some(d);
        }
        "netcheck_netns" => cfg.netcheck_only = v.to_vec(),
        "qp_table" => cfg.qp_table = v.to_vec(),
        "qos_from" => {
            let d = PathBuf::from(first);
            if !d.is_dir() {
                return Err(format!(
                    "{first}: not a directory (it holds IF.dcb-app, IF.dcb-apptrust, IF.dcb-pfc or IF.mlnx_qos)"
                ));
            }
            cfg.qos_from = Some(d);
        }
        "dump_dir" => cfg.dump_dir = Some(PathBuf::from(first)),
        "dump_on" => {
            cfg.dump_on = v
                .iter()
                .map(|r| rules::parse(r).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
        }
        "dump_seconds" => cfg.dump_seconds = positive(num(first)?)?,
        "dump_interval" => {
            cfg.dump_interval = file::parse_duration(first).map_err(|e| e.to_string())?;
        }
        "dump_keep" => cfg.dump_keep = positive(num::<u64>(first)?)? as usize,
        "recorder_bytes" => {
            let b = file::parse_bytes(first).map_err(|e| e.to_string())?;
            if !(64 << 10..=16 << 30).contains(&b) {
                return Err(format!("{b} bytes: give 64K to 16G"));
            }
            cfg.recorder_bytes = b;
        }
        "recorder_seconds" => cfg.recorder_seconds = positive(num(first)?)?,
        "redact" => {
            cfg.redact = match first {
                "on" => true,
                "off" => false,
                _ => return Err(format!("'{first}': use on or off")),
            }
        }
        "memory_limit" => {
            let b = file::parse_bytes(first).map_err(|e| e.to_string())?;
            if !(32 << 20..=1 << 40).contains(&b) {
                return Err(format!("{b} bytes: give 32M to 1024G"));
            }
            cfg.memory_limit = b;
        }
        "window" => {
            let d = file::parse_duration(first).map_err(|e| e.to_string())?;
            if d.as_secs() < 1 {
                return Err("the window is at least 1s".into());
            }
            cfg.window = d;
        }
        "log_format" => {
            cfg.log_format = match first {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err(format!("'{first}': use text or json")),
            }
        }
        "top_flows" => cfg.top_flows = num::<usize>(first)?.min(10_000),
        "idle_timeout" => {
            let d = file::parse_duration(first).map_err(|e| e.to_string())?;
            if d.is_zero() {
                return Err("give a positive duration".into());
            }
            cfg.analyzer.idle_timeout_ns = d.as_nanos().min(u128::from(u64::MAX)) as u64;
        }
        "gap_timeout" => {
            let d = file::parse_duration(first).map_err(|e| e.to_string())?;
            if d.is_zero() {
                return Err("give a positive duration".into());
            }
            cfg.analyzer.gap_timeout_ns = d.as_nanos().min(u128::from(u64::MAX)) as u64;
        }
        "link_speed" => {
            let g: f64 = num(first)?;
            if !(g.is_finite() && g > 0.0 && g <= 10_000.0) {
                return Err(format!("{g}: give Gbit/s between 0 and 10000"));
            }
            cfg.analyzer.link_bps = (g * 1e9) as u64;
        }
        "web_config_file" => {
            cfg.web.config = Some(std::sync::Arc::new(
                agent::web::WebConfig::load(std::path::Path::new(first))
                    .map_err(|e| e.to_string())?,
            ));
        }
        "max_connections" => {
            let n: usize = num(first)?;
            if !(1..=65_536).contains(&n) {
                return Err(format!("{n}: give 1 to 65536"));
            }
            cfg.web.max_connections = n;
        }
        "report" => {
            cfg.web.report = match first {
                "on" => true,
                "off" => false,
                _ => return Err(format!("'{first}': use on or off")),
            }
        }
        "max_peers" => {
            let n: usize = num(first)?;
            // 4,096 pairs: 100,000 series per source at most, 5 MiB of state
            if !(1..=4_096).contains(&n) {
                return Err(format!("{n}: give 1 to 4096"));
            }
            cfg.max_peers = n;
        }
        "topology" => {
            cfg.topology = Some(std::sync::Arc::new(
                agent::topology::Topology::load(std::path::Path::new(first))
                    .map_err(|e| format!("{first}: {e}"))?,
            ));
        }
        _ => return Err("not an agent setting".into()),
    }
    Ok(())
}

fn positive(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("give a positive number".into())
    } else {
        Ok(n)
    }
}

/// `ADDR:PORT`, `[V6]:PORT`, or `V6:PORT` unbracketed: what `--listen $(NODE_IP):9470`
/// gives on a node whose address (the downward API's `status.hostIP`) is IPv6.
fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    let bad = || format!("'{s}' is not ADDR:PORT (e.g. 0.0.0.0:9470)");
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let (ip, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| bad())?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    Ok(SocketAddr::from((ip, port)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn listen_takes_an_unbracketed_ipv6_address_from_the_downward_api() {
        let a = |s: &str| super::listen_addr(s).map(|a| a.to_string());
        assert_eq!(a("192.0.2.10:9470").unwrap(), "192.0.2.10:9470");
        assert_eq!(a("[2001:db8::1]:9470").unwrap(), "[2001:db8::1]:9470");
        assert_eq!(a("2001:db8::1:9470").unwrap(), "[2001:db8::1]:9470");
        for bad in [
            "localhost",
            "2001:db8::1",
            "192.0.2.10",
            "2001:db8::1:99999",
            ":9470",
        ] {
            assert!(a(bad).unwrap_err().contains("is not ADDR:PORT"), "{bad}");
        }
    }
}
