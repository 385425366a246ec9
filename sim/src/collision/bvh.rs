//! The k-DOP hierarchy of one tree, built from the tree's structure (Chen 2011 §5.3) rather
//! than from where its primitives are: a node bounds a representative stem's offspring, so
//! primitives that move together stay in one node as the tree sways.
//!
//! Representative stems (Algorithm 3): at the bottom, the stems that have leaves (Chen's
//! Rstems_b3, so that a leaf is bounded with its stem's other leaves), above them the stems
//! whose radius first falls below a small-branch threshold (Rstems_b2) and, above those, the stems whose radius
//! first falls below a branch threshold (Rstems_b1); from the b1 stems, level after level
//! until fewer than [`TOP_LEVEL`] remain: for each stem of the level not yet covered, its
//! nearest ancestor that branches (has more than one child) and that ancestor's parent is a
//! candidate; the widest candidate becomes a representative of the next level and covers the
//! stems of this level it is an ancestor of; again until all are covered. The tree's root
//! segment represents the whole tree.
//!
//! The hierarchy (Algorithm 4): a representative's node holds, depth first through its
//! offspring, the pieces (leaf nodes: `Child::Piece`) of every segment it reaches and of
//! their leaves, and the node of every other representative it meets, where it stops. Nodes
//! are stored children first, the root last, so a refit is one pass in order. A node's
//! children beyond [`FANOUT`] are grouped, consecutive runs in their depth-first order (one
//! twig's pieces and leaves lie together), under nodes of the same representative, so that
//! no node has more than [`FANOUT`] children and the traversal compares few pairs of
//! children at any node; the grouping too follows the structure, not the positions.
//!
//! Traversal: all pairs of pieces of the tree whose k-DOPs overlap and that are not
//! connected (`Topology::connected`), found by descending every pair of overlapping children
//! of every node; the pairs come out in an order that depends only on the hierarchy. A query
//! ([`Bvh::query`]) finds the pieces whose k-DOPs overlap one given k-DOP, for a piece whose
//! pairs are looked for alone.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::connect::{Topology, NONE};
use super::kdop::Kdop;

/// The hierarchy's top level has fewer representative stems than this (Chen's num_hl).
pub const TOP_LEVEL: usize = 8;
/// Most children of a node: a representative's children beyond this are grouped, in their
/// depth-first order, under nodes of the same representative (see [`Bvh::build`]).
pub const FANOUT: usize = 8;
/// A task adds its pairs to the shared count ([`Bvh::task_pairs`]) this many at a time.
pub const LIMIT_BATCH: usize = 4096;
/// Chen's width thresholds, as fractions of the tree's root radius: a stem thinner than
/// `BRANCH` times it starts a branch representative (Rstems_b1), thinner than `SMALL` times
/// it a small-branch representative (Rstems_b2).
pub const BRANCH: f32 = 0.25;
/// See [`BRANCH`].
pub const SMALL: f32 = 0.08;

/// A child of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    /// Another node.
    Node(u32),
    /// A piece (a leaf of the hierarchy).
    Piece(u32),
}

/// A piece of the traversal ([`Bvh::tasks`]): the pairs inside a node, or between two
/// children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    Within(u32),
    Between(Child, Child),
}

/// A node: the representative stem it bounds the offspring of, and its children.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub rep: u32,
    pub kids: Range<u32>,
}

/// A tree's hierarchy.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    /// Children before parents; the root last.
    pub nodes: Vec<Node>,
    kids: Vec<Child>,
    /// Per node, the node it is a child of ([`NONE`] for the root); per piece, the node that
    /// holds it ([`NONE`] for a piece in none).
    up_node: Vec<u32>,
    up_piece: Vec<u32>,
}

impl Bvh {
    /// The hierarchy of a tree of `topo`'s structure, segment radii `radius`, whose segment s
    /// (with its leaves) has the pieces `pieces(s)`; `leafy(s)`: segment s has leaves (Chen's
    /// Rstems_b3, each the representative of a node that holds its leaves).
    pub fn build(
        topo: &Topology,
        radius: &[f32],
        leafy: impl Fn(u32) -> bool,
        pieces: impl Fn(u32) -> Vec<u32>,
    ) -> Bvh {
        let n = radius.len();
        let mut is_rep = vec![false; n];
        if n == 0 {
            return Bvh::default();
        }
        for rep in representatives(topo, radius) {
            is_rep[rep as usize] = true;
        }
        for s in 0..n as u32 {
            if leafy(s) {
                is_rep[s as usize] = true;
            }
        }
        is_rep[0] = true;
        let mut bvh = Bvh::default();
        // Depth first from the root, a frame per representative being built: its pending
        // segments and the children gathered so far.
        struct Frame {
            rep: u32,
            stack: Vec<u32>,
            kids: Vec<Child>,
        }
        let mut frames = vec![Frame {
            rep: 0,
            stack: vec![0],
            kids: Vec::new(),
        }];
        while let Some(top) = frames.last_mut() {
            match top.stack.pop() {
                Some(v) => {
                    top.kids.extend(pieces(v).into_iter().map(Child::Piece));
                    // Children in reverse so that they come out in index order.
                    let mut next_rep = Vec::new();
                    for &c in topo.children(v).iter().rev() {
                        if is_rep[c as usize] {
                            next_rep.push(c);
                        } else {
                            top.stack.push(c);
                        }
                    }
                    for c in next_rep.into_iter().rev() {
                        frames.push(Frame {
                            rep: c,
                            stack: vec![c],
                            kids: Vec::new(),
                        });
                    }
                }
                None => {
                    let done = frames.pop().expect("a frame is on the stack");
                    let mut kids = done.kids;
                    // A representative's node can gather hundreds of children; consecutive
                    // ones (depth first: the pieces of one twig, its leaves, the next twig)
                    // lie together, so they are grouped FANOUT at a time under nodes of the
                    // same representative, level after level, until at most FANOUT remain.
                    while kids.len() > FANOUT {
                        let mut grouped = Vec::with_capacity(kids.len().div_ceil(FANOUT));
                        for run in kids.chunks(FANOUT) {
                            if let [one] = run {
                                grouped.push(*one);
                                continue;
                            }
                            let start = bvh.kids.len() as u32;
                            bvh.kids.extend_from_slice(run);
                            grouped.push(Child::Node(bvh.nodes.len() as u32));
                            bvh.nodes.push(Node {
                                rep: done.rep,
                                kids: start..bvh.kids.len() as u32,
                            });
                        }
                        kids = grouped;
                    }
                    let start = bvh.kids.len() as u32;
                    bvh.kids.extend(kids);
                    let id = bvh.nodes.len() as u32;
                    bvh.nodes.push(Node {
                        rep: done.rep,
                        kids: start..bvh.kids.len() as u32,
                    });
                    if let Some(parent) = frames.last_mut() {
                        parent.kids.push(Child::Node(id));
                    }
                }
            }
        }
        bvh.up_node = vec![NONE; bvh.nodes.len()];
        for (i, node) in bvh.nodes.iter().enumerate() {
            for c in &bvh.kids[node.kids.start as usize..node.kids.end as usize] {
                match *c {
                    Child::Node(j) => bvh.up_node[j as usize] = i as u32,
                    Child::Piece(p) => {
                        let p = p as usize;
                        if bvh.up_piece.len() <= p {
                            bvh.up_piece.resize(p + 1, NONE);
                        }
                        bvh.up_piece[p] = i as u32;
                    }
                }
            }
        }
        bvh
    }

    /// The children of node `i`.
    pub fn kids(&self, i: u32) -> &[Child] {
        let r = &self.nodes[i as usize].kids;
        &self.kids[r.start as usize..r.end as usize]
    }

    /// The root node.
    pub fn root(&self) -> Option<u32> {
        self.nodes.len().checked_sub(1).map(|r| r as u32)
    }

    /// Refits every node to its children (`nodes` holds a k-DOP per node), bottom up.
    pub fn refit(&self, piece: &[Kdop], nodes: &mut [Kdop]) {
        for i in 0..self.nodes.len() {
            nodes[i] = self.fitted(i, piece, nodes);
        }
    }

    /// Node `i`'s k-DOP: the union of its children's (its child nodes' already fitted).
    fn fitted(&self, i: usize, piece: &[Kdop], nodes: &[Kdop]) -> Kdop {
        let mut k = Kdop::empty(piece.first().map_or(nodes[i].kind(), Kdop::kind));
        for c in self.kids(i as u32) {
            match *c {
                Child::Node(j) => k.merge(&nodes[j as usize]),
                Child::Piece(p) => k.merge(&piece[p as usize]),
            }
        }
        k
    }

    /// Every piece whose k-DOP overlaps `probe` (`piece` and `nodes` as the traversal takes
    /// them), found by descending the nodes that overlap it, passed to `found` in an order
    /// that depends only on the hierarchy; returns the number of k-DOP pairs compared.
    /// `stack` is scratch.
    pub fn query(
        &self,
        probe: &Kdop,
        (piece, nodes): (&[Kdop], &[Kdop]),
        stack: &mut Vec<u32>,
        mut found: impl FnMut(u32),
    ) -> u64 {
        let Some(root) = self.root() else {
            return 0;
        };
        stack.clear();
        if nodes[root as usize].overlaps(probe) {
            stack.push(root);
        }
        let mut tests = 1;
        while let Some(i) = stack.pop() {
            for &c in self.kids(i) {
                tests += 1;
                match c {
                    Child::Node(j) => {
                        if nodes[j as usize].overlaps(probe) {
                            stack.push(j);
                        }
                    }
                    Child::Piece(p) => {
                        if piece[p as usize].overlaps(probe) {
                            found(p);
                        }
                    }
                }
            }
        }
        tests
    }

    /// Refits the nodes above the pieces `changed` (the only pieces whose k-DOPs changed since
    /// the last refit), bottom up: the same k-DOPs as [`refit`](Self::refit), computed for
    /// those nodes only. `dirty` is scratch (one flag per node, all false between calls).
    pub fn refit_above(&self, changed: &[u32], (piece, nodes): (&[Kdop], &mut [Kdop]), dirty: &mut Vec<bool>) {
        dirty.resize(self.nodes.len(), false);
        for &p in changed {
            if let Some(&up) = self.up_piece.get(p as usize).filter(|&&up| up != NONE) {
                dirty[up as usize] = true;
            }
        }
        for i in 0..self.nodes.len() {
            if !std::mem::replace(&mut dirty[i], false) {
                continue;
            }
            nodes[i] = self.fitted(i, piece, nodes);
            if self.up_node[i] != NONE {
                dirty[self.up_node[i] as usize] = true;
            }
        }
    }

    /// The traversal (every pair of pieces whose k-DOPs overlap and for which `connected` is
    /// false, found from the pairs inside the root) cut into independent tasks, in the order a
    /// single traversal would run them: the root opened `depth` levels down (a node's tasks:
    /// each pair of its children, each child node's own tasks after the pairs of the child
    /// with the later children). Running the tasks one by one ([`task_pairs`]) and joining
    /// their outputs in this order gives every such pair once, in an order that depends only
    /// on the hierarchy.
    ///
    /// [`task_pairs`]: Self::task_pairs
    pub fn tasks(&self, depth: u32) -> Vec<Task> {
        let mut out = Vec::new();
        if let Some(root) = self.root() {
            self.open(root, depth, &mut out);
        }
        out
    }

    fn open(&self, i: u32, depth: u32, out: &mut Vec<Task>) {
        if depth == 0 {
            out.push(Task::Within(i));
            return;
        }
        let kids = self.kids(i);
        for (a, &ka) in kids.iter().enumerate() {
            for &kb in &kids[a + 1..] {
                out.push(Task::Between(ka, kb));
            }
            if let Child::Node(j) = ka {
                self.open(j, depth - 1, out);
            }
        }
    }

    /// The pairs of one task of [`tasks`](Self::tasks) (smaller index first), into `out`, with
    /// the number of k-DOP pairs compared. `limit`: the tasks'
    /// running count of pairs found, and how many there may be: once the count passes it (the
    /// count is brought up to date every [`LIMIT_BATCH`] pairs), the task stops early and
    /// returns `None`, its output incomplete.
    pub fn task_pairs(
        &self,
        task: Task,
        (piece, nodes): (&[Kdop], &[Kdop]),
        connected: impl Fn(u32, u32) -> bool,
        out: &mut Vec<(u32, u32)>,
        limit: (&AtomicUsize, usize),
    ) -> Option<u64> {
        let mut t = Traversal {
            bvh: self,
            piece,
            nodes,
            connected: &connected,
            out,
            tests: 0,
            limit,
            unreported: 0,
            stopped: false,
        };
        match task {
            Task::Within(i) => t.within(i),
            Task::Between(a, b) => t.between(a, b),
        }
        (!t.stopped).then_some(t.tests)
    }
}

struct Traversal<'a, F: Fn(u32, u32) -> bool> {
    bvh: &'a Bvh,
    piece: &'a [Kdop],
    nodes: &'a [Kdop],
    connected: &'a F,
    out: &'a mut Vec<(u32, u32)>,
    tests: u64,
    /// The shared count of pairs found and its limit (see [`Bvh::task_pairs`]).
    limit: (&'a AtomicUsize, usize),
    /// Pairs found since the shared count was last brought up to date.
    unreported: usize,
    /// The shared count passed the limit: stop.
    stopped: bool,
}

impl<F: Fn(u32, u32) -> bool> Traversal<'_, F> {
    fn kdop(&self, c: Child) -> &Kdop {
        match c {
            Child::Node(i) => &self.nodes[i as usize],
            Child::Piece(p) => &self.piece[p as usize],
        }
    }

    /// The pairs inside node `i`: between its children, and inside each child node.
    fn within(&mut self, i: u32) {
        let kids = self.bvh.kids(i);
        for (a, &ka) in kids.iter().enumerate() {
            for &kb in &kids[a + 1..] {
                self.between(ka, kb);
            }
            if let Child::Node(j) = ka {
                self.within(j);
            }
        }
    }

    /// The pairs with one piece under `a` and one under `b`.
    fn between(&mut self, a: Child, b: Child) {
        if self.stopped {
            return;
        }
        self.tests += 1;
        if !self.kdop(a).overlaps(self.kdop(b)) {
            return;
        }
        match (a, b) {
            (Child::Piece(p), Child::Piece(q)) => {
                if !(self.connected)(p, q) {
                    self.out.push((p.min(q), p.max(q)));
                    self.unreported += 1;
                    if self.unreported == LIMIT_BATCH {
                        self.unreported = 0;
                        let (count, most) = self.limit;
                        self.stopped = count.fetch_add(LIMIT_BATCH, Ordering::Relaxed) + LIMIT_BATCH > most;
                    }
                }
            }
            (Child::Node(i), Child::Node(j)) => {
                // Descend the larger node (by its box's x + y + z widths), so that the
                // smaller is tested against its children, which it overlaps fewer of than the
                // larger's k-DOP. (Descending the node with more children instead: a
                // treeE-sized tree's whole traversal in Chen's model at 10 m/s took 60 ms on 2
                // threads against 38, `sylva bench sim --model chen --segments 14615 --leaves
                // 16607 --threads 2 --wind 10 --self-collision 14 --collision-free`.)
                let (big, small) = if self.nodes[i as usize].span() >= self.nodes[j as usize].span() {
                    (i, b)
                } else {
                    (j, a)
                };
                for &k in self.bvh.kids(big) {
                    self.between(k, small);
                }
            }
            (Child::Node(i), other) | (other, Child::Node(i)) => {
                for &k in self.bvh.kids(i) {
                    self.between(k, other);
                }
            }
        }
    }
}

/// The representative stems of every level (Algorithm 3), the root excepted.
fn representatives(topo: &Topology, radius: &[f32]) -> Vec<u32> {
    let n = radius.len();
    let r0 = radius[0];
    let first_below = |w: f32| -> Vec<u32> {
        (1..n as u32)
            .filter(|&s| radius[s as usize] < w && radius[topo.parent(s) as usize] >= w)
            .collect()
    };
    // Pre-order numbers and subtree sizes: a is an ancestor of s (or s) when s's number falls
    // in a's range.
    let mut order = vec![0u32; n];
    let mut size = vec![1u32; n];
    for i in (1..n).rev() {
        size[topo.parent(i as u32) as usize] += size[i];
    }
    {
        let mut next = vec![0u32; n];
        for i in 0..n {
            if i > 0 {
                let p = topo.parent(i as u32) as usize;
                order[i] = next[p];
                next[p] += size[i];
            }
            next[i] = order[i] + 1;
        }
    }
    let is_ancestor = |a: u32, s: u32| {
        let (a, s) = (a as usize, s as usize);
        order[a] <= order[s] && order[s] < order[a] + size[a]
    };
    let mut all = first_below(SMALL * r0);
    let mut level = first_below(BRANCH * r0);
    all.extend(&level);
    while level.len() >= TOP_LEVEL {
        // Each stem's candidate: the parent of its nearest branching ancestor.
        let cand: Vec<u32> = level
            .iter()
            .map(|&s| {
                let mut q = topo.parent(s);
                while q != NONE && topo.children(q).len() < 2 {
                    q = topo.parent(q);
                }
                match q {
                    NONE => 0,
                    q if topo.parent(q) == NONE => q,
                    q => topo.parent(q),
                }
            })
            .collect();
        // The widest candidate of a stem not yet covered becomes a representative and covers
        // the stems it is an ancestor of; again until every stem is covered.
        let mut by_width: Vec<u32> = cand.clone();
        by_width.sort_unstable_by(|&a, &b| radius[b as usize].total_cmp(&radius[a as usize]).then(a.cmp(&b)));
        by_width.dedup();
        let mut covered = vec![false; level.len()];
        let mut next = Vec::new();
        for c in by_width {
            let own_uncovered = level
                .iter()
                .zip(&cand)
                .zip(&covered)
                .any(|((_, &cs), &done)| cs == c && !done);
            if !own_uncovered {
                continue;
            }
            for (k, &s) in level.iter().enumerate() {
                if !covered[k] && is_ancestor(c, s) {
                    covered[k] = true;
                }
            }
            next.push(c);
        }
        next.sort_unstable();
        next.dedup();
        if next.len() >= level.len() {
            break;
        }
        all.extend(&next);
        level = next;
    }
    all.retain(|&s| s != 0);
    all.sort_unstable();
    all.dedup();
    all
}
