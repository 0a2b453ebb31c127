//! Words for the NAD lint: each typed `Lint` becomes a netcheck `Finding` (id, severity,
//! title, detail, evidence, fix, snippet) plus the object, field path and location it is
//! about (a [`NadFinding`] of the NAD report, `report::nad`).

use crate::config::limits::{CNI_CONFIG_MAX_BYTES, CNI_MAX_PLUGINS};
use crate::netcheck::checks::Evidence;
use crate::netcheck::nad::cni::Oversize;
use crate::netcheck::nad::ipv4::ip;
use crate::netcheck::nad::objects::ObjRef;
use crate::netcheck::nad::rules::{fixed_config, Host, Lint, MtuOf, PeerOf, Rule, Whose};
use crate::netcheck::nad::static_ipam::Problem;
use crate::netcheck::report::nad::{ConfigPos, GroupNad, NadFinding, Object};
use crate::netcheck::report::Finding;
use std::fmt::Write;

mod overlap;
use overlap::overlap_words;

fn h(a: u32) -> String {
    ip(a).to_string()
}

fn obj(o: &ObjRef) -> String {
    o.to_string()
}

struct Words {
    title: String,
    detail: String,
    evidence: Vec<Evidence>,
    fix: Vec<String>,
}

fn w(title: String, detail: impl Into<String>, fix: Vec<String>) -> Words {
    Words {
        title,
        detail: detail.into(),
        evidence: Vec::new(),
        fix,
    }
}

fn ev(q: impl Into<String>, a: impl Into<String>) -> Evidence {
    Evidence {
        query: q.into(),
        answer: a.into(),
    }
}

/// The first (at most four) of `total` items, then how many in all.
fn few_of(mut items: Vec<String>, total: usize) -> String {
    items.truncate(4);
    if total <= items.len() {
        items.join(", ")
    } else {
        format!("{}, ... ({total} in all)", items.join(", "))
    }
}

/// `node1 ens1f0`, `ipam.gateway`, `node1 ens1f0 (its gateway)`.
fn whose(w: &Whose) -> String {
    match w {
        Whose::Pf { node, pf } => format!("{node} {pf}"),
        Whose::IpamGateway => "ipam.gateway".into(),
        Whose::PfGateway { node, pf } => format!("{node} {pf} (its gateway)"),
    }
}

/// The other NAD, or `node1 routes it via ens1f0`.
fn peer_of(p: &PeerOf) -> String {
    match p {
        PeerOf::Nad(o) => o.to_string(),
        PeerOf::Routed { node, pf } => format!("{node} routes it via {pf}"),
    }
}

/// `node1 ens1f0`, or `POLICY spec.mtu`.
fn mtu_of(m: &MtuOf) -> String {
    match m {
        MtuOf::Pf { node, pf } => format!("{node} {pf}"),
        MtuOf::Policy(o) => format!("{o} spec.mtu"),
    }
}

fn hosts_list(hs: &[Host]) -> String {
    hs.iter()
        .map(|x| format!("{} ({})", h(x.addr), whose(&x.whose)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The words of every rule: one arm per `Rule`, kept as one table (longer than the
/// usual function on purpose: each arm is the whole text of one finding, side by side).
fn words(l: &Lint) -> Words {
    let who = l.object.as_ref().map(obj).unwrap_or_default();
    match &l.rule {
        Rule::NoNodeFacts => w(
            "No node facts given: the subnet, exclude, capacity and MTU checks against the nodes were skipped".into(),
            "Give the nodes' PF addresses with --nodes FILE or --from DIR (ip -j dumps) to check that each range lies in its PF's subnet and that no node address can be handed to a pod.",
            vec!["rocetap netcheck --nad ... --sriov-policy ... --nodes nodes.yaml".into()],
        ),
        Rule::NoPolicies => w(
            "No SriovNetworkNodePolicy given: NADs cannot be followed to their PFs".into(),
            "The resource annotation of a NAD names a resource that a SriovNetworkNodePolicy defines (resourceName, pfNames, numVfs, mtu); without the policies the PF-subnet, capacity and MTU checks were skipped.",
            vec!["add --sriov-policy FILE... (kubectl get sriovnetworknodepolicies -A -o json)".into()],
        ),
        Rule::ConfigMissing => w(format!("{who} has no spec.config"), "A NetworkAttachmentDefinition without spec.config makes Multus look for a CNI configuration file of the same name on every node; this lint cannot check it.", vec!["put the CNI configuration JSON into spec.config".into()]),
        Rule::ConfigNotString => w(format!("{who}: spec.config is not a string"), "spec.config holds the CNI configuration as JSON text (a string); the API server rejects a mapping here.", vec!["write it as `config: '{ ... }'` or as a `config: |` block".into()]),
        Rule::ConfigNotObject => w(format!("{who}: spec.config is not a JSON object"), "The CNI configuration must be one JSON object with cniVersion, name and type or plugins.", vec!["write spec.config as {\"cniVersion\": ..., \"name\": ..., \"plugins\": [...]}".into()]),
        Rule::ConfigTooLarge { what } => {
            let title = match what {
                Oversize::Bytes(n) => format!("{who}: spec.config is {n} bytes, more than the {} KiB this lint reads", CNI_CONFIG_MAX_BYTES >> 10),
                Oversize::Plugins(n) => format!("{who}: spec.config chains {n} plugins, more than the {CNI_MAX_PLUGINS} this lint reads"),
                Oversize::Reader(m) => format!("{who}: spec.config cannot be read: {m}"),
            };
            w(
                title,
                "A CNI configuration is a few kilobytes: the main plugin, sbr, tuning and the like. One this large is a mistake (a generated list gone wrong) or hostile; it was not checked further.",
                vec!["keep spec.config to the plugins the pod needs".into()],
            )
        }
        Rule::ConfigJson { line, col, msg } => w(
            format!("{who}: spec.config is not valid JSON: {msg} at line {line} column {col} of the configuration"),
            "The CNI runtime parses spec.config as strict JSON (no comments, no trailing commas, double quotes only): the pod would fail to start with a parse error.",
            vec!["fix the JSON at that position (check with `jq . <<< \"$CONFIG\"`)".into()],
        ),
        Rule::CniVersionMissing => w(format!("{who}: spec.config has no cniVersion"), "Without cniVersion the runtime assumes 0.1.0, whose results carry no interface list: chained plugins such as sbr then have nothing to work on.", vec!["add \"cniVersion\": \"0.4.0\" (or \"1.0.0\" with CNI plugins >= 1.0)".into()]),
        Rule::CniVersionUnknown { found } => w(format!("{who}: cniVersion {found:?} is not a CNI spec version"), format!("Known versions: {}.", crate::netcheck::nad::cni::CNI_VERSIONS.join(", ")), vec!["use \"0.4.0\" or \"1.0.0\"".into()]),
        Rule::UnknownKey { key, within, suggestion } => w(
            format!("{who}: unknown key {key:?} in {within}"),
            "Plugins silently ignore keys they do not know, so a misspelt option simply has no effect.",
            vec![match suggestion {
                Some(s) => format!("did you mean {s:?}?"),
                None => format!("remove {key:?} or check the plugin's documentation"),
            }],
        ),
        Rule::BadValue { what } => w(format!("{who}: {what}"), "whereabouts refuses (or misreads) such a value and the pod does not get an address.", vec!["write IPv4 addresses as A.B.C.D and ranges/excludes as A.B.C.D/LEN".into()]),
        Rule::StaticAddress { value, problem } => {
            let field = l.path.rsplit('.').next().unwrap_or("address");
            let what = match problem {
                Problem::NoPrefix => format!("static {field} {value:?} has no prefix length"),
                Problem::PrefixTooLong { max } => format!("static {field} {value:?} has a prefix longer than /{max}"),
                Problem::NotAnAddress => format!("static {field} {value:?} is not an IP address{}", if matches!(field, "address" | "dst") { "/prefix" } else { "" }),
                Problem::NotAList => format!("static IPAM {field} is not a list of objects"),
            };
            w(
                format!("{who}: {what}"),
                "The static IPAM plugin reads every address and route destination as ADDRESS/LEN (an IPv4 prefix at most /32, an IPv6 one at most /128) and every gateway as an address; on anything else the pod's network setup fails and the pod does not start.",
                vec!["write it as A.B.C.D/LEN (LEN 0-32) or an IPv6 address/LEN (LEN 0-128), e.g. 198.51.100.7/24".into()],
            )
        }
        Rule::MissingSbr { .. } => w(
            format!("{who} gives pods a second interface for an RDMA resource but has no sbr plugin: replies leave through eth0, ARP requests from the RDMA subnet go unanswered"),
            "A multi-homed pod routes everything with one main table whose default route leaves through eth0. Requests arriving on the SR-IOV interface from another subnet are then answered through eth0 (or dropped by rp_filter, so ARP is never answered). The sbr plugin adds `ip rule from <VF address> lookup <table>` and moves the VF's routes into that table, so traffic from the VF address leaves through the VF.",
            vec!["chain {\"type\": \"sbr\"} right after the main plugin (the corrected spec.config is below)".into()],
        ),
        Rule::SbrBeforeMain { main, .. } => w(
            format!("{who}: sbr is chained before the main plugin ({main}), where it has no interface to act on"),
            "Chained plugins run in order and sbr works on the interface and addresses the previous plugin returned; first in the chain it fails or does nothing.",
            vec!["move {\"type\": \"sbr\"} after the main plugin (the corrected spec.config is below)".into()],
        ),
        Rule::NoPolicy { resource } => w(format!("{who} asks for resource {resource}, which no SriovNetworkNodePolicy given defines"), "A pod asking for this resource stays Pending (no node advertises it), or the annotation is misspelt.", vec![format!("check the annotation against the policies' resourceName ({resource:?} → resourceName {:?})", resource.rsplit('/').next().unwrap_or(resource))]),
        Rule::PfNotOnAnyNode { pfs, resource } => w(format!("{who}: no node in the node facts has an IPv4 address on {} (pfNames of {resource})", pfs.join(", ")), "The PF names of the policy must match the nodes' netdev names, and the PFs need their addresses for the subnet checks.", vec!["check nicSelector.pfNames against `ip -j addr` on the nodes".into()]),
        Rule::RangeOffSubnet { range, pfs, subnets } => {
            let mut x = w(
                format!("{who}: range {range} is not inside the subnet of the PF its resource selects ({})", subnets.iter().map(|(c, _)| c.to_string()).collect::<Vec<_>>().join(", ")),
                format!("VFs of {} share the PF's wire and ToR: a VF address outside the PF's subnet is not routed back to the pod (the ToR has no route for {range} on this port), so the RDMA interface cannot reach its peers.", pfs.join(", ")),
                vec![format!("use a range inside {}", subnets.first().map(|s| s.0.to_string()).unwrap_or_default())],
            );
            for (c, nodes) in subnets {
                x.evidence.push(ev(format!("PF subnet {c}"), format!("nodes {}", nodes.join(", "))));
            }
            x
        }
        Rule::BoundOutside { key, addr, range } => w(format!("{who}: {key} {} is outside the range {range}", h(*addr)), "whereabouts takes range_start / range_end inside the range's CIDR; outside it the bound is ignored or the allocation fails.", vec![format!("set {key} to an address inside {range}")]),
        Rule::StartAfterEnd { start, end } => w(format!("{who}: range_start {} is after range_end {}", h(*start), h(*end)), "No address lies between them: every pod on this network fails to get an address.", vec!["swap range_start and range_end".into()]),
        Rule::ExcludeOutside { exclude, range, partly } => w(
            format!("{who}: exclude {exclude} is {} the range {range}", if *partly { "partly outside" } else { "outside" }),
            "whereabouts does not check that excludes lie inside the range: an exclude meant for this range that lies elsewhere protects nothing (a typo here usually means a node or gateway address is still handed out).",
            vec![format!("exclude addresses inside {range}, e.g. the nodes' PF addresses as A.B.C.D/32")],
        ),
        Rule::HostAllocatable { range, hosts } => {
            let gw = hosts.iter().any(|x| x.gateway);
            let mut x = w(
                format!(
                    "{who}: range {range} can hand a pod {} already in use: {}",
                    if hosts.len() == 1 { "an address" } else { "addresses" },
                    hosts_list(hosts)
                ),
                format!("whereabouts hands out every address of the range that is not excluded{}: a pod that gets a node's PF address (or the ToR's) makes a duplicate address on the wire and breaks that node{}.", if gw { ", and never skips the gateway" } else { "" }, if gw { " or the whole rail" } else { "" }),
                vec![format!("add to exclude: {}", hosts.iter().map(|x| format!("{}/32", h(x.addr))).collect::<Vec<_>>().join(", "))],
            );
            for hs in hosts {
                x.evidence.push(ev(h(hs.addr), whose(&hs.whose)));
            }
            x
        }
        Rule::Capacity { range, allocatable, nodes, pfs, vfs_per_pf, needed } => w(
            format!("{who}: range {range} has {allocatable} allocatable addresses for {needed} VFs ({nodes} node{} on this ToR × {vfs_per_pf} VFs{})", if *nodes == 1 { "" } else { "s" }, if pfs != nodes { format!(", {pfs} PFs") } else { String::new() }),
            "When every VF is in use, pods beyond the pool's size stay in ContainerCreating with `could not allocate IP`.",
            vec![format!(
                "widen the range (a /{} holds {} addresses before excludes) or lower numVfs",
                prefix_for(*needed),
                cap_of(prefix_for(*needed))
            )],
        ),
        Rule::Overlap { nads, kind } => overlap_words(nads, *kind),
        Rule::SbrNoGateway { subnet, peers, peers_total } => {
            let mut x = w(
                format!(
                    "{who}: sbr without an IPAM gateway: traffic from the VF address to {} misses sbr's table and leaves through the pod's default route (eth0), not the VF",
                    few_of(peers.iter().map(|p| p.0.to_string()).collect(), *peers_total)
                ),
                format!("sbr sends traffic from the VF address to its own table, which without a gateway in the IPAM result holds only the connected route {subnet}. A lookup that misses there falls through to the next rule, so traffic to other subnets follows the main table: out through eth0 with the VF's source address. That works for everything on {subnet}; peers on other rails or behind the ToR are reached over the pod network (if it carries the VF's source address), not over RDMA."),
                vec![format!("only if those peers must be reached through the VF: add \"gateway\": \"<the ToR's address in {subnet}>\" to the ipam section (and exclude it from the range)")],
            );
            for (c, why) in peers {
                x.evidence.push(ev(c.to_string(), peer_of(why)));
            }
            if *peers_total > peers.len() {
                x.evidence.push(ev(
                    format!("and {} more", peers_total - peers.len()),
                    format!("{peers_total} off-subnet peers in all"),
                ));
            }
            x
        }
        Rule::SbrOptionIgnored { option, installed, needs } => w(format!("{who}: the installed sbr {installed} ignores {option:?} (needs {needs})"), "Older plugin binaries silently ignore keys they do not know: the option has no effect.", vec![format!("install CNI plugins {needs}, or drop {option:?}")]),
        Rule::SbrOptionUnverified { option, needs } => w(format!("{who}: sbr option {option:?} needs CNI plugins {needs}; the installed version is unknown"), "Older sbr binaries silently ignore it.", vec!["give --cni-bin-dir /opt/cni/bin or --sbr-version X.Y.Z to check".into()]),
        Rule::SbrNotInstalled { dir } => w(format!("{who} chains sbr, but {dir} has no sbr binary"), "The pod fails to start: `failed to find plugin \"sbr\" in path`.", vec!["install the CNI reference plugins (containernetworking/plugins) into the CNI bin directory".into()]),
        Rule::ArpFlux { subnet, others, others_total, missing } => w(
            format!(
                "{who}: several RDMA interfaces in {subnet} (with {}) without the tuning sysctls against ARP flux ({})",
                few_of(others.iter().map(obj).collect(), *others_total),
                missing.join(", ")
            ),
            "With two interfaces in one subnet Linux answers ARP for either address on both, and may send from one through the other; peers then learn the wrong MAC and RDMA traffic lands on the wrong VF.",
            vec!["chain {\"type\": \"tuning\", \"sysctl\": {\"net.ipv4.conf.IFNAME.arp_ignore\": \"1\", \"net.ipv4.conf.IFNAME.arp_announce\": \"2\", \"net.ipv4.conf.IFNAME.arp_filter\": \"1\", \"net.ipv4.conf.IFNAME.rp_filter\": \"2\"}}".into()],
        ),
        Rule::RoceMtu { vf_mtu, roce_mtu, source } => w(
            format!("{who}: VF MTU {vf_mtu} gives RoCE MTU {} ({source})", roce_mtu.map_or("none".into(), |m| m.to_string())),
            "The RoCE MTU is the largest of 256, 512, 1024, 2048, 4096 that fits the netdev MTU minus 96 bytes of headers (GRH 40, UDP 8, BTH 12, XRCETH 4, AtomicETH 28, ICRC 4): 1500 → 1024, 4200 → 4096.",
            vec!["set mtu 4200 or more (9000 is usual) in the SriovNetworkNodePolicy, and on the switch ports".into()],
        ),
        Rule::VfMtuAbovePf { vf_mtu, source, pf_mtu, pf } => w(
            format!("{who}: VF MTU {vf_mtu} ({source}) is above the PF MTU {pf_mtu} ({})", mtu_of(pf)),
            "A VF cannot send frames larger than its PF: setting the MTU fails (the pod does not start) or large frames are dropped.",
            vec![format!("raise the PF MTU to {vf_mtu} (the policy's mtu) or lower the VF's")],
        ),
    }
}

fn prefix_for(n: u64) -> u8 {
    (1..=30u8)
        .rev()
        .find(|l| cap_of(*l) >= n)
        .unwrap_or(8)
        .max(8)
}

fn cap_of(len: u8) -> u64 {
    (1u64 << (32 - u32::from(len))) - 2
}

/// Words one typed lint: its title, detail, evidence and fix, the corrected `spec.config` (as JSON
/// and as a snippet) when the rule has one, and the object, field path and location.
pub fn finding(l: &Lint) -> NadFinding {
    let x = words(l);
    let fixed = fixed_config(&l.rule).and_then(|t| serde_json::from_str(t).ok());
    let snippet = fixed_config(&l.rule).map(|t| {
        let mut s = String::from("corrected spec.config:\n");
        for line in t.lines() {
            let _ = writeln!(s, "  {line}");
        }
        s.trim_end().to_string()
    });
    NadFinding {
        finding: Finding {
            id: l.rule.id(),
            severity: l.severity,
            title: x.title,
            detail: x.detail,
            evidence: x.evidence,
            fix: x.fix,
            snippet,
        },
        object: l.object.as_ref().map(|o| Object {
            kind: o.kind.clone(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
        }),
        path: l.path.clone(),
        location: l.loc.as_ref().map(std::string::ToString::to_string),
        config_position: l.config_pos.map(|p| ConfigPos {
            line: p.line,
            column: p.col,
        }),
        fixed_config: fixed,
        nads: match &l.rule {
            Rule::Overlap { nads, .. } => nads
                .iter()
                .map(|m| GroupNad {
                    kind: m.obj.kind.clone(),
                    namespace: m.obj.namespace.clone(),
                    name: m.obj.name.clone(),
                    ranges: m.ranges.clone(),
                    resource: m.resource.clone(),
                    network_name: m.network_name.clone(),
                })
                .collect(),
            _ => Vec::new(),
        },
    }
}
