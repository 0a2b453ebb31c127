//! The NAD lint's inputs as types: the objects read (NADs, policies and their PFs), the
//! nodes' PF facts, where each came from, and why an input could not be read.

use crate::netcheck::nad::cni;
use crate::netcheck::nad::ipv4::Cidr;
use crate::yaml::{Node, Pos};

/// Why an input could not be read or understood, in one line that names the file (and, where known,
/// line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// kind, namespace and name of a Kubernetes object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    /// The object's `kind`, e.g. `NetworkAttachmentDefinition`.
    pub kind: String,
    /// `metadata.namespace` as written (`default` when the object gives none).
    pub namespace: String,
    /// `metadata.name`; `(unnamed, document N)` when the object has none.
    pub name: String,
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// A place in an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The file as named on the command line (`-` is standard input).
    pub file: String,
    /// The line, counted from 1.
    pub line: usize,
    /// The column, counted from 1.
    pub col: usize,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A NetworkAttachmentDefinition as the lint needs it: who it is, where it was read, its resource
/// annotation and its `spec.config`.
#[derive(Clone, Debug)]
pub struct Nad {
    /// Its kind, namespace and name.
    pub obj: ObjRef,
    /// The file it was read from, as named on the command line.
    pub file: String,
    /// Where the object starts in that file.
    pub pos: Pos,
    /// `k8s.v1.cni.cncf.io/resourceName`, e.g. `nvidia.com/rdma_rail0`.
    pub resource: Option<String>,
    /// Where the resource annotation's value is in the file; `None` without the annotation.
    pub resource_pos: Option<Pos>,
    /// `spec.config` as written (a string holding JSON, normally).
    pub config: Option<Node>,
    /// How positions inside `spec.config`'s text map to the file, where they do exactly.
    pub config_map: Option<cni::ConfigMap>,
}

/// One entry of a policy's `nicSelector.pfNames`: `ens1f0`, or `ens1f0#0-7` for part of its VFs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfName {
    /// The PF's netdev name, without the `#first-last` suffix.
    pub name: String,
    /// `#first-last` VF range, when given.
    pub vfs: Option<(u32, u32)>,
}

/// A SriovNetworkNodePolicy: the resource it defines and the PFs whose VFs back it.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Its kind, namespace and name.
    pub obj: ObjRef,
    /// `spec.resourceName` as written (without the `nvidia.com/` prefix a NAD's annotation
    /// carries).
    pub resource: String,
    /// `spec.nicSelector.pfNames`: the PFs whose VFs the resource hands out.
    pub pf_names: Vec<PfName>,
    /// `spec.numVfs`: VFs created on each PF; `None` when not given.
    pub num_vfs: Option<u32>,
    /// `spec.mtu`: the MTU set on the VFs (and PF) in bytes; `None` when not given.
    pub mtu: Option<u32>,
    /// `spec.isRdma`: the VFs are RDMA devices; `None` when not given.
    pub is_rdma: Option<bool>,
}

impl Policy {
    /// VFs this policy hands out per PF: the `#a-b` range, else `numVfs`.
    pub fn vfs_per_pf(&self, pf: &PfName) -> Option<u32> {
        match pf.vfs {
            Some((a, b)) if b >= a => Some(b - a + 1),
            _ => self.num_vfs,
        }
    }
}

/// A PF on one node: its netdev name, IPv4 addresses and MTU, plus the routes through it.
#[derive(Clone, Debug, Default)]
pub struct Pf {
    /// The PF's netdev name, e.g. `ens1f0`.
    pub name: String,
    /// Its IPv4 addresses as (address, prefix length), the address a host-order `u32`.
    pub addrs: Vec<(u32, u8)>,
    /// Its MTU in bytes; `None` when the facts do not give one.
    pub mtu: Option<u32>,
    /// Next hops of routes through this PF (the ToR's address, normally).
    pub gateways: Vec<u32>,
    /// Destinations reached through a gateway on this PF (routed peers).
    pub routed: Vec<Cidr>,
}

/// What the lint knows about one node: its name and its PFs.
#[derive(Clone, Debug, Default)]
pub struct NodeFacts {
    /// The node's name (from the nodes file, or the name of its `--from` directory).
    pub name: String,
    /// The node's PFs, in the order given.
    pub pfs: Vec<Pf>,
}

impl NodeFacts {
    /// The PF named `name` on this node, if any.
    pub fn pf(&self, name: &str) -> Option<&Pf> {
        self.pfs.iter().find(|p| p.name == name)
    }
}

/// Everything the lint reads, typed: the objects of every file, and the nodes' PF facts.
#[derive(Default, Debug)]
pub struct Inputs {
    /// The object files read, in order, as named on the command line.
    pub files: Vec<String>,
    /// The NetworkAttachmentDefinitions, in file and document order.
    pub nads: Vec<Nad>,
    /// The SriovNetworkNodePolicies, in file and document order.
    pub policies: Vec<Policy>,
    /// Objects of other kinds, left alone.
    pub ignored: usize,
    /// The nodes' facts, from `--nodes FILE` and/or `--from DIR`.
    pub nodes: Vec<NodeFacts>,
    /// True when any node facts were given (even a file listing no PF): the subnet, exclude and
    /// capacity checks run only then.
    pub have_nodes: bool,
}
