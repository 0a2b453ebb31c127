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
pub mod rng;
mod sbr;
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

/// Every scenario, in `--list` order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "clean-rc",
        about: "RC WRITE/SEND/READ/atomics with immediate, invalidate, coalesced ACKs; 4 QPs, 3 host pairs, PMTU 1024-4096; no faults",
        default_packets: 300,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::clean_rc,
        knobs: false,
    },
    Scenario {
        name: "loss-upstream",
        about: "packets lost before the tap: PSN gap, one NAK (0x60) naming the missing PSN, go-back-N resend",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::loss_upstream,
        knobs: false,
    },
    Scenario {
        name: "loss-downstream",
        about: "packets lost after the tap: every PSN once, then a NAK, then the same PSNs again (duplicates)",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::loss_downstream,
        knobs: false,
    },
    Scenario {
        name: "tail-loss-timeout",
        about: "last packet of a message lost after the tap: no NAK, resend after the QP timeout (4.096 us * 2^timeout)",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::tail_loss,
        knobs: false,
    },
    Scenario {
        name: "rnr",
        about: "RNR NAKs (syndrome 0x20 | timer code) for SENDs without a receive WQE, resend after the encoded time",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::rnr,
        knobs: false,
    },
    Scenario {
        name: "read-loss",
        about: "missing READ responses (before and after the tap): re-issued READ Request from the first missing PSN, responses again",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::read_loss,
        knobs: false,
    },
    Scenario {
        name: "congestion",
        about: "incast: CE marks (ECN=3) on the hot flows, CNPs back to each sender QP paced per QP, senders' rate cut (wider gaps) and recovering",
        default_packets: 300,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: fabric::congestion,
        knobs: false,
    },
    Scenario {
        name: "pfc-storm",
        about: "PFC pause frames (802.1Qbb) on priority 3 while RoCE on VLAN PCP 3 stalls; traffic on PCP 0 keeps flowing",
        default_packets: 200,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: fabric::pfc_storm,
        knobs: false,
    },
    Scenario {
        name: "capture-loss",
        about: "PSN gaps with no NAK and no resend: the capture missed packets (sniffer overrun), not the network",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::capture_loss,
        knobs: false,
    },
    Scenario {
        name: "psn-wrap",
        about: "QPs whose PSNs (and READ response ranges) wrap through 0xFFFFFF to 0; no faults",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::psn_wrap,
        knobs: false,
    },
    Scenario {
        name: "mixed-encap",
        about: "802.1Q with PCP, RoCE v2 over IPv6, RoCE v1 (EtherType 0x8915, GRH with IPv4-mapped GIDs), UD with DETH, XRC with XRCETH",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: encap::mixed_encap,
        knobs: false,
    },
    Scenario {
        name: "icrc-corrupt",
        about: "a few frames with a bad ICRC (link bit errors) among good ones; the receiver drops them, NAK and resend follow",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: traffic::icrc_corrupt,
        knobs: false,
    },
    Scenario {
        name: "sbr-arp",
        about: "pod without sbr (SLL2, eth0 + net1): unanswered 'who-has <pod eth0 ip> tell <host RDMA ip>' on eth0; answered ARP and RoCE on net1",
        default_packets: 120,
        link: LinkType::LinuxSll2,
        ifname: "any",
        generate: sbr::sbr_arp,
        knobs: false,
    },
    Scenario {
        name: "malformed",
        about: "truncated and corrupt frames of every header kind (IP, UDP, BTH, each extended header, GRH, ARP, PFC) among good ones",
        default_packets: 120,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: malformed::malformed,
        knobs: false,
    },
    Scenario {
        name: "many-qp",
        about: "one host's RC queue pairs to many peers (a node of a big NCCL job): --qps N over --peers M, RDMA WRITEs with coalesced ACKs, round-robin; --loss PERMILLE adds go-back-N recovery",
        default_packets: 1500,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: manyqp::many_qp,
        knobs: true,
    },
    Scenario {
        name: "qos-mismarked",
        about: "QoS marking mistakes next to correct RC on DSCP 26: answers on DSCP 0 / PCP 0, a QP on DSCP 0, Not-ECT data on DSCP 26, CNPs on DSCP 48, one host on RoCE v1 and v2",
        default_packets: 200,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: qos::qos_mismarked,
        knobs: false,
    },
    Scenario {
        name: "cm-setup",
        about: "RC connections set up and torn down by the CM (REQ/REP/RTU, DREQ/DREP to QP1, RDMA-CM IP private data); one's first 3 packets not captured; a REQ retried unanswered; a REQ rejected (invalid service ID)",
        default_packets: 150,
        link: LinkType::Ethernet,
        ifname: "mlx5_0",
        generate: cm::cm_setup,
        knobs: false,
    },
];

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
pub(crate) mod tests {
    use super::*;
    use crate::capture::file::for_each_frame;
    use dissectors::{Config, IcrcStatus, StopKind};
    use std::ops::ControlFlow;

    fn gen(sc: &Scenario, packets: u64, seed: u64) -> (Vec<u8>, serde_json::Value) {
        let p = Params {
            seed,
            packets,
            snaplen: None,
            pcapng: false,
            knobs: Knobs::default(),
        };
        let mut buf = Vec::new();
        let doc = generate(sc, &p, &mut buf, "x.pcap").unwrap();
        (buf, serde_json::from_str(&doc).unwrap())
    }

    /// Every scenario: deterministic, close to the requested size, and every frame
    /// decodes completely with a good ICRC unless the scenario damaged it on purpose.
    #[test]
    fn every_scenario_is_deterministic_and_decodes() {
        for sc in SCENARIOS {
            let (a, truth) = gen(sc, sc.default_packets, 3);
            let (b, _) = gen(sc, sc.default_packets, 3);
            assert!(a == b, "{}: not deterministic", sc.name);
            let (c, _) = gen(sc, sc.default_packets, 4);
            assert!(a != c, "{}: the seed changes nothing", sc.name);
            let obs = &truth["observable"];
            let mut frames = 0u64;
            let mut bad_icrc = 0u64;
            let mut malformed = 0u64;
            let mut truncated = 0u64;
            let cfg = Config::default();
            for_each_frame(&a[..], |f| {
                frames += 1;
                let d = dissectors::decode(f.link, f.data, f.orig_len, &cfg);
                match d.stop.kind {
                    StopKind::Malformed => malformed += 1,
                    StopKind::Truncated => truncated += 1,
                    StopKind::Complete => {}
                    StopKind::Unsupported => panic!("{}: frame {frames}: {}", sc.name, d.stop),
                }
                if let Some(r) = d.roce {
                    if r.icrc == IcrcStatus::Bad && d.stop.kind == StopKind::Complete {
                        bad_icrc += 1;
                    }
                }
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(truth["packets"], frames, "{}", sc.name);
            let want = sc.default_packets;
            assert!(
                frames >= want && frames < want + 60,
                "{}: {frames} frames for {want}",
                sc.name
            );
            assert_eq!(obs["icrc_bad"], bad_icrc, "{}", sc.name);
            assert_eq!(obs["malformed"], malformed, "{}", sc.name);
            assert_eq!(obs["truncated"], truncated, "{}", sc.name);
        }
    }

    #[test]
    fn packets_scale_the_scenarios() {
        for name in ["clean-rc", "loss-upstream", "congestion", "sbr-arp"] {
            let sc = find(name).unwrap();
            let (_, small) = gen(sc, 200, 1);
            let (_, big) = gen(sc, 2000, 1);
            let n = big["packets"].as_u64().unwrap();
            assert!((2000..2100).contains(&n), "{name}: {n}");
            assert!(big["packets"].as_u64() > small["packets"].as_u64());
        }
    }

    /// Every frame of a scenario, decoded, with its timestamp.
    pub fn decoded(name: &str, packets: u64, seed: u64) -> Vec<(u64, dissectors::Decoded)> {
        decoded_with_truth(name, packets, seed).0
    }

    /// [`decoded`], with the scenario's truth document.
    pub fn decoded_with_truth(
        name: &str,
        packets: u64,
        seed: u64,
    ) -> (Vec<(u64, dissectors::Decoded)>, serde_json::Value) {
        let (buf, truth) = gen(find(name).unwrap(), packets, seed);
        let mut v = Vec::new();
        for_each_frame(&buf[..], |f| {
            v.push((
                f.ts_ns,
                dissectors::decode(f.link, f.data, f.orig_len, &Config::default()),
            ));
            ControlFlow::Continue(())
        })
        .unwrap();
        (v, truth)
    }

    #[test]
    fn pfc_storm_stalls_only_the_paused_priority() {
        let frames = decoded("pfc-storm", 1000, 2);
        let mut paused = false;
        let (mut storms, mut stalled_pcp0) = (0, 0);
        for (_, d) in &frames {
            if let Some(p) = d.pause {
                let now = p.quanta_for(3) > 0;
                storms += usize::from(now && !paused);
                paused = now;
                continue;
            }
            if paused {
                assert_ne!(d.pcp(), Some(3), "priority 3 frame during the storm");
                stalled_pcp0 += usize::from(d.pcp() == Some(0));
            }
        }
        assert!(storms >= 3 && stalled_pcp0 > 0, "{storms} {stalled_pcp0}");
    }

    #[test]
    fn every_cnp_answers_a_ce_mark_and_is_paced() {
        use std::collections::HashMap;
        let frames = decoded("congestion", 3000, 2);
        // First CE mark per sender QP, and the last CNP to it.
        let mut marked: HashMap<u32, u64> = HashMap::new();
        let mut last_cnp: HashMap<u32, u64> = HashMap::new();
        let mut senders: HashMap<(std::net::IpAddr, std::net::IpAddr), u32> = HashMap::new();
        // Responses name the requester QP behind each (requester, responder) pair.
        for (_, d) in &frames {
            let (r, ip) = (d.roce.unwrap(), d.ip.unwrap());
            if r.aeth.is_some() {
                senders.insert((ip.dst, ip.src), r.bth.dest_qp.0);
            }
        }
        let mut cnps = 0;
        for (ts, d) in &frames {
            let (r, ip) = (d.roce.unwrap(), d.ip.unwrap());
            if r.is_cnp() {
                cnps += 1;
                assert_eq!(
                    (ip.dscp, ip.ecn, ip.total_len),
                    (48, dissectors::Ecn::NotEct, 60)
                );
                assert!(r.bth.becn && r.bth.pkey.0 == 0xffff && r.bth.psn.0 == 0);
                let qp = r.bth.dest_qp.0;
                // The CNP goes back to a QP whose packets to this receiver were marked.
                let sender = senders[&(ip.dst, ip.src)];
                assert_eq!(sender, qp);
                assert!(
                    marked.get(&qp).is_some_and(|&t| t <= *ts),
                    "CNP before any CE mark"
                );
                if let Some(prev) = last_cnp.insert(qp, *ts) {
                    assert!(
                        ts - prev >= 10_000,
                        "CNPs to 0x{qp:06x} {} ns apart",
                        ts - prev
                    );
                }
            } else if ip.ecn == dissectors::Ecn::Ce {
                if let Some(&q) = senders.get(&(ip.src, ip.dst)) {
                    marked.entry(q).or_insert(*ts);
                }
            }
        }
        assert!(cnps > 10);
        // Senders slow down: packets inside one message are spaced by the sender's
        // current rate, so after CNPs some gaps are at least twice the line-rate gap.
        let mut prev: HashMap<u32, u64> = HashMap::new();
        let (mut min_gap, mut max_gap) = (u64::MAX, 0);
        for (ts, d) in &frames {
            let r = d.roce.unwrap();
            let op = r.bth.opcode.0;
            if matches!(op, 0x00 | 0x06) {
                prev.insert(r.bth.dest_qp.0, *ts);
            } else if matches!(op, 0x01 | 0x07) {
                if let Some(p) = prev.insert(r.bth.dest_qp.0, *ts) {
                    min_gap = min_gap.min(ts - p);
                    max_gap = max_gap.max(ts - p);
                }
            }
        }
        assert!(max_gap >= 2 * min_gap, "gaps {min_gap}..{max_gap} ns");
    }

    #[test]
    fn sbr_arp_leaves_only_the_pod_address_unanswered() {
        use dissectors::ArpOp;
        let frames = decoded("sbr-arp", 400, 2);
        let mut asked_pod = 0;
        for (_, d) in &frames {
            let s = d.sll.expect("SLL2 frames");
            assert!(matches!(s.ifindex, Some(3 | 4)));
            if let Some(a) = d.arp {
                let pod = a.target_ip == std::net::Ipv4Addr::new(198, 18, 1, 5);
                if a.op == ArpOp::Request && pod && a.sender_ip.octets() == [198, 19, 8, 1] {
                    asked_pod += 1;
                    assert_eq!(s.ifindex, Some(3), "asked on eth0");
                }
                if a.op == ArpOp::Reply {
                    assert_ne!(a.sender_ip, std::net::Ipv4Addr::new(198, 18, 1, 5));
                }
            }
            if d.roce.is_some() {
                assert_eq!(s.ifindex, Some(4), "RoCE only on net1");
            }
        }
        assert!(asked_pod >= 6);
    }

    #[test]
    fn psn_wrap_really_wraps() {
        let frames = decoded("psn-wrap", 150, 1);
        let psns: Vec<u32> = frames
            .iter()
            .map(|(_, d)| d.roce.unwrap().bth.psn.0)
            .collect();
        let wraps = psns
            .windows(2)
            .filter(|w| w[0] >= 0xff_fff0 && w[1] <= 0x10)
            .count();
        assert!(wraps >= 2, "{wraps}");
    }

    #[test]
    fn mixed_encap_has_every_encapsulation() {
        use dissectors::RoceVersion;
        let frames = decoded("mixed-encap", 150, 1);
        let any = |f: &dyn Fn(&dissectors::Decoded) -> bool| frames.iter().any(|(_, d)| f(d));
        assert!(any(&|d| d.pcp() == Some(3) && d.roce.is_some()));
        assert!(any(
            &|d| d.ip.is_some_and(|i| i.is_ipv6()) && d.roce.is_some()
        ));
        assert!(any(&|d| d
            .roce
            .is_some_and(|r| r.version == RoceVersion::V1)
            && d.grh.is_some_and(
                |g| g.sgid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            )));
        assert!(any(&|d| d
            .roce
            .is_some_and(|r| r.deth.is_some() && r.bth.opcode.0 == 0x64)));
        assert!(any(&|d| d
            .roce
            .is_some_and(|r| r.deth.is_some() && r.immdt.is_some())));
        assert!(any(&|d| d.roce.is_some_and(|r| r.xrceth.is_some())));
        assert!(any(&|d| d.roce.is_some_and(|r| r.bth.opcode.0 == 0xB1)));
    }

    #[test]
    fn tiny_and_snaplen_runs_work() {
        for sc in SCENARIOS {
            let p = Params {
                seed: 1,
                packets: 1,
                snaplen: Some(MIN_SNAPLEN),
                pcapng: true,
                knobs: Knobs::default(),
            };
            let mut buf = Vec::new();
            let doc = generate(sc, &p, &mut buf, "x.pcapng").unwrap();
            let t: serde_json::Value = serde_json::from_str(&doc).unwrap();
            assert!(t["packets"].as_u64().unwrap() >= 1, "{}", sc.name);
            let mut n = 0;
            for_each_frame(&buf[..], |f| {
                assert!(f.data.len() <= MIN_SNAPLEN as usize);
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(t["packets"], n);
        }
    }

    #[test]
    fn many_qp_follows_its_options() {
        let sc = find("many-qp").unwrap();
        let p = Params {
            seed: 2,
            packets: 6000,
            snaplen: Some(MIN_SNAPLEN),
            pcapng: false,
            knobs: Knobs {
                qps: Some(300),
                peers: Some(260),
                loss_permille: Some(50),
                msg_size: Some(12000),
            },
        };
        let mut buf = Vec::new();
        let doc = generate(sc, &p, &mut buf, "x.pcap").unwrap();
        let t: serde_json::Value = serde_json::from_str(&doc).unwrap();
        let n = t["packets"].as_u64().unwrap();
        assert!((6000..6010).contains(&n), "{n}");
        assert_eq!(t["observable"]["connections"], 300);
        assert_eq!(t["observable"]["flows"], 600);
        assert_eq!(t["per_direction_qp"].as_object().unwrap().len(), 600);
        assert!(t["observable"]["nak_psn_seq"].as_u64().unwrap() > 0);
        assert_eq!(
            t["observable"]["nak_psn_seq"], t["observable"]["psn_gap_events"],
            "one NAK per upstream loss"
        );
        assert!(t["per_direction_qp"]
            .as_object()
            .unwrap()
            .contains_key("198.19.0.6>198.18.0.1 qp=0x000203"));
        assert!(t["command"]
            .as_str()
            .unwrap()
            .contains("--qps 300 --peers 260 --loss 50 --msg-size 12000 --packets 6000"));
        // Other scenarios refuse the options, and --loss needs multi-packet messages.
        let k = Knobs {
            qps: Some(2),
            ..Knobs::default()
        };
        assert!(check_knobs(find("clean-rc").unwrap(), &k).is_err());
        let k = Knobs {
            loss_permille: Some(5),
            ..Knobs::default()
        };
        assert!(check_knobs(sc, &k).is_err());
    }

    #[test]
    fn truth_path_appends_the_suffix() {
        assert_eq!(
            truth_path(Path::new("a/b.pcap")),
            PathBuf::from("a/b.pcap.truth.json")
        );
    }
}
