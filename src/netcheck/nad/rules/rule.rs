//! The NAD lint's findings as values: one `Rule` variant per finding, with the numbers,
//! addresses and paths that prove it, and its stable id.

use super::{Host, MtuOf, Needs, Overlap, OverlapMember, PeerOf, Version};
use crate::netcheck::nad::cni;
use crate::netcheck::nad::ipv4::Cidr;
use crate::netcheck::nad::objects::ObjRef;

/// One finding of the NAD lint, with the values that prove it; [`Rule::id`] is its stable JSON id,
/// `netcheck::report::words::nad` words it.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// No node facts were given (`--nodes` / `--from`): the checks against the nodes' PF addresses
    /// and MTUs were skipped.
    NoNodeFacts,
    /// No SriovNetworkNodePolicy was given: NADs cannot be followed to their PFs, so the PF-subnet,
    /// capacity and MTU checks were skipped.
    NoPolicies,
    /// The NAD has no `spec.config` (Multus then looks for a file on every node, which this lint
    /// cannot see).
    ConfigMissing,
    /// `spec.config` is not a string; the API server rejects it.
    ConfigNotString,
    /// `spec.config` is valid JSON but not an object.
    ConfigNotObject,
    /// `spec.config` is beyond a limit of `config::limits` (size, plugins, nesting): not
    /// read further.
    ConfigTooLarge {
        /// Which limit, and by how much.
        what: cni::Oversize,
    },
    /// `spec.config` is not valid JSON: the CNI runtime fails to parse it and the pod does not
    /// start.
    ConfigJson {
        /// The line inside the configuration text, counted from 1.
        line: usize,
        /// The column inside the configuration text, counted from 1.
        col: usize,
        /// serde_json's message, without its position.
        msg: String,
    },
    /// No `cniVersion`: the runtime assumes 0.1.0, whose results carry no interface list for
    /// chained plugins such as sbr.
    CniVersionMissing,
    /// `cniVersion` names no CNI spec version (see `cni::CNI_VERSIONS`).
    CniVersionUnknown {
        /// The value as written.
        found: String,
    },
    /// A key the plugin (or whereabouts, or the plugin list) does not know: plugins ignore it
    /// silently, so a misspelt option has no effect.
    UnknownKey {
        /// The unknown key.
        key: String,
        /// Where it is, in words (`the sbr plugin`, `whereabouts`, `an ipRanges entry`,
        /// ...).
        within: String,
        /// A known key within edit distance 2, for "did you mean"; `None` when there is none.
        suggestion: Option<String>,
    },
    /// A value whereabouts refuses or misreads (an address or range that is not IPv4 in the form it
    /// expects).
    BadValue {
        /// What is wrong with which field, in words.
        what: String,
    },
    /// A value of the `static` IPAM plugin it refuses (an address with a prefix longer than
    /// it has bits, no prefix, not an address): the pod's network setup fails.
    StaticAddress {
        /// The value as written.
        value: String,
        /// What is wrong with it.
        problem: crate::netcheck::nad::static_ipam::Problem,
    },
    /// An RDMA NAD gives pods a second interface but chains no `sbr`: replies from the VF address
    /// leave through eth0 (or ARP from the RDMA subnet goes unanswered under rp_filter).
    MissingSbr {
        /// The whole corrected `spec.config` (sbr chained after the main plugin), as pretty-printed
        /// JSON.
        fixed: String,
    },
    /// `sbr` is chained before the main plugin, where it has no interface to act on.
    SbrBeforeMain {
        /// The main plugin's `type`.
        main: String,
        /// The whole corrected `spec.config` (sbr moved after the main plugin), as pretty-printed
        /// JSON.
        fixed: String,
    },
    /// The NAD's resource annotation names a resource no given SriovNetworkNodePolicy defines: pods
    /// asking for it stay Pending.
    NoPolicy {
        /// The resource as the annotation writes it, e.g. `nvidia.com/rdma_rail0`.
        resource: String,
    },
    /// No node in the facts has an IPv4 address on any of the policy's `pfNames`: a PF name that
    /// matches no netdev, or missing facts.
    PfNotOnAnyNode {
        /// The policy's `pfNames`.
        pfs: Vec<String>,
        /// The policy's `resourceName`.
        resource: String,
    },
    /// A range lies outside the subnet of the PFs its resource selects: the ToR does not route the
    /// VF addresses back to the pod.
    RangeOffSubnet {
        /// The NAD's range.
        range: Cidr,
        /// The PFs the resource selects (`pfNames`).
        pfs: Vec<String>,
        /// The PFs' subnets, each with the nodes that have an address in it.
        subnets: Vec<(Cidr, Vec<String>)>,
    },
    /// `range_start` or `range_end` lies outside the range's CIDR: whereabouts ignores it or fails
    /// the allocation.
    BoundOutside {
        /// Which bound: `range_start` or `range_end`.
        key: &'static str,
        /// The bound's address, a host-order `u32`.
        addr: u32,
        /// The range the bound should lie in.
        range: Cidr,
    },
    /// `range_start` is after `range_end`: no address lies between them and every pod fails to get
    /// one.
    StartAfterEnd {
        /// `range_start`, a host-order `u32`.
        start: u32,
        /// `range_end`, a host-order `u32`.
        end: u32,
    },
    /// An `exclude` lies (partly) outside its range: it protects nothing there, usually a typo that
    /// leaves a node or gateway address allocatable.
    ExcludeOutside {
        /// The exclude as written.
        exclude: Cidr,
        /// The range it belongs to.
        range: Cidr,
        /// True when part of the exclude is inside the range, false when none of it is.
        partly: bool,
    },
    /// The range can hand a pod an address already in use on the wire (a node's PF address, the ToR
    /// gateway): a duplicate address that breaks that node or the whole rail.
    HostAllocatable {
        /// The range (after start, end and excludes) that still holds the addresses.
        range: Cidr,
        /// The addresses in use that it would hand out, with whose they are.
        hosts: Vec<Host>,
    },
    /// The range holds fewer addresses than the VFs that can ask for one: pods beyond the pool's
    /// size stay in ContainerCreating.
    Capacity {
        /// The range.
        range: Cidr,
        /// Addresses whereabouts can hand out (after start, end and excludes).
        allocatable: u64,
        /// Nodes with a PF in the range's subnet (on this ToR).
        nodes: usize,
        /// PFs in the range's subnet, over all those nodes.
        pfs: usize,
        /// VFs per PF: the `pfNames` `#first-last` range, else `numVfs`.
        vfs_per_pf: u32,
        /// Addresses the VFs can ask for at most (`pfs × vfs_per_pf`).
        needed: u64,
    },
    /// The ranges of several NADs overlap, directly or through one another: one finding per
    /// such group, about its first NAD; what the overlap means is in `kind` (only
    /// `SharedPool` may be intended).
    Overlap {
        /// Every NAD of the group, in input order (the finding's own NAD first).
        nads: Vec<OverlapMember>,
        /// Whether it is one pool, separate pools, or several rails.
        kind: Overlap,
    },
    /// An RDMA NAD chains sbr but its IPAM has no gateway while peers are off-subnet: sbr's table
    /// then holds only the connected route, so traffic from the VF address to those peers misses
    /// it, falls through to the next rule and follows the main table (out through eth0 with the
    /// VF's source address). A note (info): the configuration works; it says where that traffic
    /// goes.
    SbrNoGateway {
        /// The NAD's subnet: its PF's, else its first range (all that sbr's table reaches).
        subnet: Cidr,
        /// The first off-subnet peers (at most [`super::SBR_PEERS_NAMED`]): other rails' subnets
        /// (with the NAD that uses each) and destinations the nodes route through the ToR on
        /// this PF.
        peers: Vec<(Cidr, PeerOf)>,
        /// How many off-subnet peers there are, named or not.
        peers_total: usize,
    },
    /// The installed sbr is too old for an option the NAD sets: it silently ignores it.
    SbrOptionIgnored {
        /// The option, e.g. `gateways`.
        option: String,
        /// The installed sbr's version.
        installed: Version,
        /// The versions that know the option.
        needs: Needs,
    },
    /// The NAD sets an sbr option that older binaries ignore, and the installed version is unknown.
    SbrOptionUnverified {
        /// The option.
        option: String,
        /// The versions that know it.
        needs: Needs,
    },
    /// The NAD chains sbr but `--cni-bin-dir` holds no sbr binary: the pod fails to start.
    SbrNotInstalled {
        /// The directory searched.
        dir: String,
    },
    /// Several RDMA NADs put interfaces in one subnet without the tuning sysctls against ARP flux:
    /// Linux answers ARP for either address on both, so peers learn the wrong MAC and RDMA traffic
    /// lands on the wrong VF.
    ArpFlux {
        /// The shared subnet.
        subnet: Cidr,
        /// The first few other NADs in it (at most [`super::ARP_FLUX_NAMED`]).
        others: Vec<ObjRef>,
        /// How many other NADs are in it, named or not.
        others_total: usize,
        /// The sysctls this NAD's tuning plugin does not set to a value that prevents it
        /// (`arp_ignore`, `arp_announce`, `arp_filter`, `rp_filter`).
        missing: Vec<&'static str>,
    },
    /// The VF MTU caps the RoCE MTU below 4096 (the netdev MTU minus 96 bytes of headers, rounded
    /// down to 256..4096).
    RoceMtu {
        /// The VF MTU in bytes (1500 when set nowhere).
        vf_mtu: u32,
        /// The RoCE MTU it gives in bytes; `None` when it is too small for even 256.
        roce_mtu: Option<u32>,
        /// Where the MTU comes from (the plugin's `mtu`, the policy's `spec.mtu`), or `not set
        /// anywhere`.
        source: String,
    },
    /// The VF MTU is above its PF's MTU: setting it fails (the pod does not start) or large frames
    /// are dropped.
    VfMtuAbovePf {
        /// The VF MTU in bytes.
        vf_mtu: u32,
        /// Where the VF MTU comes from (the plugin's `mtu` or the policy's `spec.mtu`).
        source: String,
        /// The PF's MTU in bytes: the smallest below the VF MTU, from the nodes' facts (else the
        /// policy's `spec.mtu`).
        pf_mtu: u32,
        /// Which PF (or the policy's `spec.mtu` when no node gave its MTU).
        pf: MtuOf,
    },
}

impl Rule {
    /// The stable identifier of the rule (JSON `id`).
    pub fn id(&self) -> &'static str {
        match self {
            Rule::NoNodeFacts => "nad-no-node-facts",
            Rule::NoPolicies => "nad-no-policies",
            Rule::ConfigMissing
            | Rule::ConfigNotString
            | Rule::ConfigNotObject
            | Rule::ConfigTooLarge { .. } => "nad-config",
            Rule::ConfigJson { .. } => "nad-config-json",
            Rule::CniVersionMissing | Rule::CniVersionUnknown { .. } => "nad-cni-version",
            Rule::UnknownKey { .. } => "nad-unknown-key",
            Rule::BadValue { .. } => "nad-bad-value",
            Rule::StaticAddress { .. } => "nad-static-address",
            Rule::MissingSbr { .. } | Rule::SbrBeforeMain { .. } => "nad-missing-sbr",
            Rule::NoPolicy { .. } => "nad-no-policy",
            Rule::PfNotOnAnyNode { .. } => "nad-pf-unknown",
            Rule::RangeOffSubnet { .. } => "nad-range-subnet",
            Rule::BoundOutside { .. } | Rule::StartAfterEnd { .. } => "nad-range-bounds",
            Rule::ExcludeOutside { .. } => "nad-exclude-outside",
            Rule::HostAllocatable { .. } => "nad-host-allocatable",
            Rule::Capacity { .. } => "nad-capacity",
            Rule::Overlap { .. } => "nad-range-overlap",
            Rule::SbrNoGateway { .. } => "nad-sbr-gateway",
            Rule::SbrOptionIgnored { .. } | Rule::SbrOptionUnverified { .. } => "nad-sbr-version",
            Rule::SbrNotInstalled { .. } => "nad-sbr-installed",
            Rule::ArpFlux { .. } => "nad-arp-flux",
            Rule::RoceMtu { .. } => "nad-roce-mtu",
            Rule::VfMtuAbovePf { .. } => "nad-mtu",
        }
    }
}
