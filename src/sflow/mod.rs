//! `rocetap sflow`: a collector of sFlow v5 datagrams. Each datagram is decoded
//! (`dissectors::sflow`), its sequence number checked for collector-side loss per agent
//! and sub-agent (`seq.rs`), and each sample counted against its agent and port
//! (`port.rs`): the sampled packet headers are decoded by the usual decoder, so RoCE
//! inside is counted by opcode class, NAK, CNP and ECN; counts are scaled by the sampling
//! rate with their 95 % error. Deterministic, no I/O, no clock: the sources
//! (`source.rs`: a pcap of datagrams, a UDP socket) feed it; the report layer
//! (`report::sflow`) words it and the metrics (`metrics.rs`) export it.
//!
//! Bounded: at most `max_agents` agents and `max_ports` ports per agent are followed by
//! name; datagrams of further agents go to one `other` agent, samples of further ports
//! to the agent's `other` port, each overflow counted. Per datagram nothing is
//! allocated once an agent and port exist.

#[cfg(feature = "agent")]
pub mod metrics;
pub mod port;
pub mod seq;
pub mod source;

use dissectors::sflow::{CounterRecord, Datagram, FlowRecord, Sample, SourceId, Stop};
use dissectors::{Decoded, LinkType, StopKind};
pub use port::{Port, QpPair, Sampled, TopEntry};
pub use seq::SeqTrack;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The collector's settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Agents (address, sub-agent) followed by name.
    pub max_agents: usize,
    /// Ports (data sources) followed by name per agent.
    pub max_ports: usize,
    /// QP pairs kept per port (space-saving top-k).
    pub top_qps: usize,
    /// The decoder's settings for sampled headers (RoCE port).
    pub decode: dissectors::Config,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_agents: 256,
            max_ports: 512,
            top_qps: 10,
            decode: dissectors::Config {
                check_icrc: false,
                ..dissectors::Config::default()
            },
        }
    }
}

/// An agent: its address and sub-agent id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId {
    /// The agent address of the datagram header.
    pub addr: IpAddr,
    /// The sub-agent id.
    pub sub_agent: u32,
}

/// What one agent sent.
#[derive(Clone, Debug)]
pub struct Agent {
    /// Datagrams received from the agent.
    pub datagrams: u64,
    /// Its sequence numbers: loss, reordering, resets.
    pub seq: SeqTrack,
    /// Its uptime in the last datagram, milliseconds.
    pub uptime_ms: u32,
    /// Its ports (data sources) followed by name.
    pub ports: BTreeMap<SourceId, Port>,
    /// Samples of ports past `max_ports`.
    pub other: Port,
    /// Samples that went to `other`.
    pub ports_overflow: u64,
}

impl Agent {
    fn new(top: usize) -> Agent {
        Agent {
            datagrams: 0,
            seq: SeqTrack::default(),
            uptime_ms: 0,
            ports: BTreeMap::new(),
            other: Port::new(top),
            ports_overflow: 0,
        }
    }
}

/// Datagrams that did not decode whole, by where they stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Datagrams whose header did not decode (not counted against any agent).
    pub bad_header: u64,
    /// Datagrams whose samples or records stopped early (their decoded part counted).
    pub truncated: u64,
    /// Datagrams whose samples or records contradict the format.
    pub malformed: u64,
    /// The last stop seen, for the report.
    pub last: Option<Stop>,
}

/// The collector.
#[derive(Clone, Debug)]
pub struct Collector {
    cfg: Config,
    /// The agents followed by name.
    pub agents: BTreeMap<AgentId, Agent>,
    /// Datagrams of agents past `max_agents`.
    pub other: Agent,
    /// Datagrams that went to `other`.
    pub agents_overflow: u64,
    /// Datagrams received (decoded or not).
    pub datagrams: u64,
    /// Frames of a capture that were not UDP datagrams to the collector port (or were
    /// cut by the capture).
    pub not_sflow: u64,
    /// Datagrams that did not decode whole.
    pub damage: Damage,
    /// Flow samples counted.
    pub flow_samples: u64,
    /// Counters samples counted.
    pub counter_samples: u64,
    /// Discarded packet samples counted.
    pub discard_samples: u64,
    /// Samples and records of formats this collector does not read, skipped by length.
    pub unknown_samples: u64,
    /// Records of formats not read, skipped by length.
    pub unknown_records: u64,
    decoded: Decoded,
}

impl Collector {
    /// A collector with nothing counted yet.
    pub fn new(cfg: Config) -> Collector {
        Collector {
            cfg,
            agents: BTreeMap::new(),
            other: Agent::new(cfg.top_qps),
            agents_overflow: 0,
            datagrams: 0,
            not_sflow: 0,
            damage: Damage::default(),
            flow_samples: 0,
            counter_samples: 0,
            discard_samples: 0,
            unknown_samples: 0,
            unknown_records: 0,
            decoded: dissectors::decode(LinkType::Ethernet, &[], 0, &cfg.decode),
        }
    }

    /// Datagrams lost between the exporters and this collector: see `lost`.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Counts a frame of a capture that is not an sFlow datagram.
    pub fn not_sflow(&mut self) {
        self.not_sflow += 1;
    }

    /// One datagram (a UDP payload).
    pub fn ingest(&mut self, b: &[u8]) {
        self.datagrams += 1;
        let d = match Datagram::parse(b) {
            Ok(d) => d,
            Err(e) => {
                self.damage.bad_header += 1;
                self.damage.last = Some(e);
                return;
            }
        };
        let h = d.header;
        let id = AgentId {
            addr: h.agent,
            sub_agent: h.sub_agent_id,
        };
        let cfg = self.cfg;
        let agent = if self.agents.contains_key(&id) || self.agents.len() < cfg.max_agents {
            self.agents
                .entry(id)
                .or_insert_with(|| Agent::new(cfg.top_qps))
        } else {
            self.agents_overflow += 1;
            &mut self.other
        };
        agent.datagrams += 1;
        agent.seq.see(h.sequence_number, h.uptime_ms);
        agent.uptime_ms = h.uptime_ms;
        let mut stop = None;
        let mut counts = Counts::default();
        for s in d.samples() {
            match s {
                Err(e) => {
                    stop = Some(e);
                    break;
                }
                Ok(s) => {
                    if let Err(e) = sample(agent, &cfg, s, &mut self.decoded, &mut counts) {
                        stop = Some(e);
                        break;
                    }
                }
            }
        }
        self.flow_samples += counts.flow;
        self.counter_samples += counts.counters;
        self.discard_samples += counts.discards;
        self.unknown_samples += counts.unknown_samples;
        self.unknown_records += counts.unknown_records;
        if let Some(e) = stop {
            match e.kind {
                StopKind::Malformed => self.damage.malformed += 1,
                _ => self.damage.truncated += 1,
            }
            self.damage.last = Some(e);
        }
    }

    /// Datagrams lost between the exporters and this collector (sum over agents).
    pub fn lost(&self) -> u64 {
        self.agents.values().map(|a| a.seq.lost).sum()
    }
}

#[derive(Default)]
struct Counts {
    flow: u64,
    counters: u64,
    discards: u64,
    unknown_samples: u64,
    unknown_records: u64,
}

fn port<'a>(a: &'a mut Agent, cfg: &Config, src: SourceId) -> &'a mut Port {
    if a.ports.contains_key(&src) || a.ports.len() < cfg.max_ports {
        a.ports.entry(src).or_insert_with(|| Port::new(cfg.top_qps))
    } else {
        a.ports_overflow += 1;
        &mut a.other
    }
}

fn sample(
    a: &mut Agent,
    cfg: &Config,
    s: Sample<'_>,
    d: &mut Decoded,
    n: &mut Counts,
) -> Result<(), Stop> {
    match s {
        Sample::Flow(f) => {
            n.flow += 1;
            let p = port(a, cfg, f.source_id);
            p.flow_samples += 1;
            p.sampling_rate = f.sampling_rate;
            p.sample_pool = f.sample_pool;
            p.exporter_drops = f.drops;
            for r in f.records() {
                match r? {
                    FlowRecord::Header(h) => p.header(&h, f.sampling_rate, &cfg.decode, d),
                    FlowRecord::QueueDepth(q) => {
                        p.max_queue_depth = Some(p.max_queue_depth.unwrap_or(0).max(q));
                    }
                    FlowRecord::TransitDelay(t) => {
                        p.max_transit_ns = Some(p.max_transit_ns.unwrap_or(0).max(t));
                    }
                    FlowRecord::Unknown { .. } => n.unknown_records += 1,
                    FlowRecord::Switch(_) | FlowRecord::EgressQueue(_) => {}
                }
            }
        }
        Sample::Discard(x) => {
            n.discards += 1;
            let p = port(a, cfg, x.source_id);
            p.discard(x.reason);
            for r in x.records() {
                if let FlowRecord::Unknown { .. } = r? {
                    n.unknown_records += 1;
                }
            }
        }
        Sample::Counters(c) => {
            n.counters += 1;
            let p = port(a, cfg, c.source_id);
            p.counter_samples += 1;
            for r in c.records() {
                match r? {
                    CounterRecord::Interface(i) => p.interface = Some(i),
                    CounterRecord::Ethernet(e) => p.ethernet = Some(e),
                    CounterRecord::Unknown { .. } => n.unknown_records += 1,
                }
            }
        }
        Sample::Unknown { .. } => n.unknown_samples += 1,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// A datagram of agent `agent` (IPv4) with one empty flow sample of port `port`.
    fn datagram(agent: u32, seq: u32, port: u32) -> Vec<u8> {
        let sample = words(&[seq, port, 10, 100, 0, port, 0, 0]);
        let mut d = words(&[5, 1, agent, 0, seq, seq * 10, 1, 1, sample.len() as u32]);
        d.extend(sample);
        d
    }

    #[test]
    fn agents_and_ports_past_the_caps_go_to_other() {
        let mut c = Collector::new(Config {
            max_agents: 1,
            max_ports: 1,
            ..Config::default()
        });
        c.ingest(&datagram(0xc000_0201, 1, 1));
        c.ingest(&datagram(0xc000_0201, 2, 2)); // a second port of the first agent
        c.ingest(&datagram(0xc000_0202, 1, 1)); // a second agent
        assert_eq!(c.agents.len(), 1);
        assert_eq!((c.agents_overflow, c.other.datagrams), (1, 1));
        let a = c.agents.values().next().unwrap();
        assert_eq!(a.ports.len(), 1);
        assert_eq!((a.ports_overflow, a.other.flow_samples), (1, 1));
        assert_eq!(c.flow_samples, 3);
        assert_eq!(c.lost(), 0);
        // damage is counted, never a panic
        c.ingest(&[0, 0, 0, 5]);
        c.ingest(&datagram(0xc000_0201, 3, 1)[..40]);
        assert_eq!((c.damage.bad_header, c.damage.truncated), (1, 1));
        assert_eq!(c.datagrams, 5);
    }
}
