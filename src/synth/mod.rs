//! `rocetap synth`: deterministic synthetic traces of RoCE scenarios, each with a ground
//! truth file (`FILE.truth.json`) beside it.
//!
//! This module owns the scenario registry, the command (argument checks, refusing to
//! overwrite, the truth file) and the guarantee that a (scenario, seed, packets,
//! snaplen, format) tuple produces byte-identical output forever: the only randomness is
//! the in-tree SplitMix64 in [`rng`], timestamps start at a fixed epoch, and the truth
//! is counted while frames are written (`out`). Frames stream to the file one message
//! exchange at a time, so memory does not grow with `--packets`.
//!
//! Layout: [`frame`] builds frames from the dissectors' Reprs, `rc` models RC queue
//! pairs and their loss recovery, and the scenario groups live in `traffic` (RC
//! loss/recovery), `fabric` (ECN/CNP congestion, PFC), `encap` (mixed
//! encapsulations), `sbr` (the pod ARP failure), `malformed`, [`manyqp`]
//! (thousands of queue pairs, for scale) and `qos` (QoS marking mistakes).
#![warn(missing_docs)]

mod cm;
mod encap;
mod error;
pub use error::KnobError;
mod fabric;
pub mod frame;
mod malformed;
pub mod manyqp;
mod out;
mod qos;
mod rc;
mod registry;
pub use registry::SCENARIOS;
pub mod rng;
mod sbr;
pub mod taps;
pub mod taps_mirror;
mod traffic;

use crate::error::exit;
use dissectors::LinkType;
pub use error::Error;
use out::{Observable, Out};
use rng::Rng;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Generates one scenario into `out` until about `packets` frames are written.
type Generate = fn(&mut Out, &mut Rng, u64) -> io::Result<()>;

/// One entry of `rocetap synth --list`.
pub struct Scenario {
    /// The scenario's name, as given to `rocetap synth NAME`.
    pub name: &'static str,
    /// One line on what the trace shows, for `--list`.
    pub about: &'static str,
    /// Frames written when `--packets` is not given (the samples use this).
    pub default_packets: u64,
    /// Link type of the frames written (Ethernet or Linux cooked capture).
    pub link: LinkType,
    /// Interface name recorded in pcapng output.
    pub ifname: &'static str,
    generate: Generate,
    /// Takes the scenario options (`--qps`, `--peers`, `--loss`, `--msg-size`).
    knobs: bool,
}

/// Scenario options from the command line; `None` is the scenario's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Knobs {
    /// `--qps`: queue pairs (RC connections) to generate.
    pub qps: Option<u32>,
    /// `--peers`: hosts the queue pairs are spread over.
    pub peers: Option<u32>,
    /// `--loss`: packets lost upstream of the tap, per thousand.
    pub loss_permille: Option<u32>,
    /// `--msg-size`: bytes per message.
    pub msg_size: Option<u32>,
}

impl Knobs {
    fn any(&self) -> bool {
        self.qps.is_some()
            || self.peers.is_some()
            || self.loss_permille.is_some()
            || self.msg_size.is_some()
    }

    /// The options as `synth` arguments, for the truth's `command`.
    fn args(&self) -> String {
        let mut s = String::new();
        for (name, v) in [
            ("--qps", self.qps),
            ("--peers", self.peers),
            ("--loss", self.loss_permille),
            ("--msg-size", self.msg_size),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(" {name} {v}"));
            }
        }
        s
    }
}

/// The scenario called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The smallest snaplen accepted: every header of every scenario fits in it, so the
/// truth counts stay observable in the cut frames.
pub const MIN_SNAPLEN: u32 = 128;
/// The snaplen recorded when none is given.
const FULL_SNAPLEN: u32 = 65535;

/// The truth file. Field order is the order written.
#[derive(Serialize)]
struct Truth<'a> {
    scenario: &'a str,
    seed: u64,
    /// Frames written.
    packets: u64,
    /// The `--packets` target (the scenario default when not given).
    packets_requested: u64,
    snaplen: Option<u32>,
    format: &'a str,
    linktype: u32,
    /// Regenerates this trace (output name relative to the truth file).
    command: String,
    observable: Observable,
    counts: serde_json::Map<String, serde_json::Value>,
    per_direction_qp: serde_json::Map<String, serde_json::Value>,
    facts: serde_json::Map<String, serde_json::Value>,
    notes: Vec<String>,
}

/// Settings of one generation.
pub struct Params {
    /// Seed of the random generator: the same seed gives the same bytes.
    pub seed: u64,
    /// Frames to write (`--packets`; about this many, the scenario default when not given).
    pub packets: u64,
    /// Snaplen to cut frames to and record; `None` writes whole frames and records 65535.
    pub snaplen: Option<u32>,
    /// Write pcapng instead of pcap.
    pub pcapng: bool,
    /// Scenario options from the command line.
    pub knobs: Knobs,
}

/// Generates `sc` into `w`; returns the truth document.
fn generate(sc: &Scenario, p: &Params, w: &mut dyn Write, out_name: &str) -> io::Result<String> {
    let mut out = Out::new(
        w,
        sc.link,
        p.snaplen.unwrap_or(FULL_SNAPLEN),
        p.pcapng,
        sc.ifname,
    )?;
    out.knobs = p.knobs;
    let mut rng = Rng::new(p.seed);
    (sc.generate)(&mut out, &mut rng, p.packets)?;
    let s = out.finish()?;
    let mut command = format!("rocetap synth {} --seed {}", sc.name, p.seed);
    command.push_str(&p.knobs.args());
    if p.packets != sc.default_packets {
        command.push_str(&format!(" --packets {}", p.packets));
    }
    if let Some(n) = p.snaplen {
        command.push_str(&format!(" --snaplen {n}"));
    }
    if p.pcapng {
        command.push_str(" --pcapng");
    }
    command.push_str(&format!(" -o {out_name}"));
    let truth = Truth {
        scenario: sc.name,
        seed: p.seed,
        packets: s.frames,
        packets_requested: p.packets,
        snaplen: p.snaplen,
        format: if p.pcapng { "pcapng" } else { "pcap" },
        linktype: sc.link.linktype(),
        command,
        observable: s.obs,
        counts: s.counts,
        per_direction_qp: s.per_direction_qp,
        facts: s.facts,
        notes: s.notes,
    };
    let mut doc = serde_json::to_string_pretty(&truth).map_err(io::Error::other)?;
    doc.push('\n');
    Ok(doc)
}

/// What `synth` is asked to write (the command line, as the command hands it on).
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The scenario's name (`None` only with `list`).
    pub scenario: Option<String>,
    /// The capture file; the truth goes beside it.
    pub output: Option<PathBuf>,
    /// Seed of the generator.
    pub seed: u64,
    /// Approximate number of frames (`None`: the scenario's default).
    pub packets: Option<u64>,
    /// Bytes kept of each frame (at least [`MIN_SNAPLEN`]).
    pub snaplen: Option<u32>,
    /// Write pcapng instead of pcap.
    pub pcapng: bool,
    /// many-qp: queue pairs.
    pub qps: Option<u32>,
    /// many-qp: peers.
    pub peers: Option<u32>,
    /// many-qp: per mille of messages that lose a packet.
    pub loss: Option<u32>,
    /// many-qp: bytes per WRITE.
    pub msg_size: Option<u32>,
    /// Overwrite existing files.
    pub force: bool,
    /// Only list the scenarios.
    pub list: bool,
}

/// Lists the scenarios or writes one (and its truth); returns the exit code.
pub fn run(a: Config) -> Result<i32, Error> {
    if a.list {
        let width = SCENARIOS.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut o = io::stdout().lock();
        for s in SCENARIOS {
            if let Err(e) = writeln!(o, "{:width$}  {}", s.name, s.about) {
                return if crate::error::is_broken_pipe(&e) {
                    Ok(exit::OK)
                } else {
                    Err(Error::List(e))
                };
            }
        }
        return Ok(exit::OK);
    }
    let name = a.scenario.as_deref().unwrap_or_default();
    let sc = find(name).ok_or_else(|| Error::UnknownScenario {
        name: name.to_string(),
        count: SCENARIOS.len(),
    })?;
    let Some(path) = a.output.as_deref() else {
        return Err(Error::NoOutput);
    };
    if let Some(n) = a.snaplen {
        if n < MIN_SNAPLEN {
            return Err(Error::Snaplen {
                given: n,
                min: MIN_SNAPLEN,
            });
        }
    }
    let knobs = Knobs {
        qps: a.qps,
        peers: a.peers,
        loss_permille: a.loss,
        msg_size: a.msg_size,
    };
    check_knobs(sc, &knobs).map_err(Error::Knobs)?;
    let params = Params {
        seed: a.seed,
        packets: a.packets.unwrap_or(sc.default_packets).max(1),
        snaplen: a.snaplen,
        pcapng: a.pcapng,
        knobs,
    };
    let truth_path = truth_path(path);
    let name = path.display().to_string();
    for p in [path, truth_path.as_path()] {
        if !a.force && p.exists() {
            return Err(Error::Exists(p.to_path_buf()));
        }
    }
    let write = |name: &str| {
        let name = name.to_string();
        move |error| Error::Write { name, error }
    };
    let file = open(path, a.force).map_err(write(&name))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let out_name = path
        .file_name()
        .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    let doc = generate(sc, &params, &mut w, &out_name)
        .and_then(|d| w.flush().map(|()| d))
        .map_err(write(&name))?;
    std::fs::write(&truth_path, doc).map_err(write(&truth_path.display().to_string()))?;
    Ok(exit::OK)
}

/// The scenario options make sense for this scenario and are in range.
fn check_knobs(sc: &Scenario, k: &Knobs) -> Result<(), KnobError> {
    if !sc.knobs {
        if k.any() {
            return Err(KnobError::NotManyQp(sc.name));
        }
        return Ok(());
    }
    let qps = k.qps.unwrap_or(manyqp::QPS);
    if !(1..=manyqp::MAX_QPS).contains(&qps) {
        return Err(KnobError::Qps(qps));
    }
    let peers = k.peers.unwrap_or(manyqp::PEERS.min(qps));
    if peers == 0 || peers > qps || peers > manyqp::MAX_PEERS {
        return Err(KnobError::Peers { peers, qps });
    }
    if let Some(l) = k.loss_permille {
        if l > 100 {
            return Err(KnobError::Loss(l));
        }
        if l > 0 && k.msg_size.unwrap_or(manyqp::MSG_SIZE) <= 4096 {
            return Err(KnobError::LossNeedsBigMessages);
        }
    }
    if let Some(m) = k.msg_size {
        if !(1..=1 << 20).contains(&m) {
            return Err(KnobError::MsgSize(m));
        }
    }
    Ok(())
}

/// `FILE.truth.json` beside `FILE`.
pub fn truth_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".truth.json");
    PathBuf::from(s)
}

/// Creates the output; without `force` the file must not exist (checked atomically).
fn open(p: &Path, force: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    o.open(p)
}

#[cfg(test)]
pub(crate) mod tests;
