//! What the wind has broken in a model whose joints break by the bending moment (Weber's and
//! Oliapuram's): which segments left the trees, where each piece broke off, the counts, and
//! the pieces themselves as free rigid bodies (`debris`). The models decide what breaks; this
//! holds the outcome and answers the questions every such model answers alike.
//!
//! Invariants: `gone` and `cut` have one entry per segment of the forest; a segment `cut` is
//! `gone` (the first segment of a piece); `broken + uprooted` counts the calls of
//! [`BreakageState::detach`] since the last [`clear`](BreakageState::clear); nothing is `gone`
//! when that count is 0.

use super::debris::{Debris, DebrisParams};
use super::Breakage;
use crate::hash::StateHash;

/// The breakage state of a forest: per segment, gone with a piece and cut at its joint; the
/// counts of branches broken off and trees uprooted; the debris.
pub struct BreakageState {
    /// The broken pieces and uprooted trees, as free rigid bodies.
    debris: Debris,
    /// Per segment: part of a piece broken off or of an uprooted tree.
    gone: Vec<bool>,
    /// Per segment: a piece broke off at its joint (the first segment of a piece, which hangs
    /// from nothing even when its parent later breaks off too).
    cut: Vec<bool>,
    /// Branches broken off and trees uprooted since the last reset.
    broken: usize,
    uprooted: usize,
}

impl BreakageState {
    /// Nothing broken, for a forest of `segments` segments, with the default debris settings.
    pub fn new(segments: usize) -> BreakageState {
        BreakageState {
            debris: Debris::new(DebrisParams::default()).expect("the default debris settings are valid"),
            gone: vec![false; segments],
            cut: vec![false; segments],
            broken: 0,
            uprooted: 0,
        }
    }

    /// The broken pieces and uprooted trees, falling and lying as free rigid bodies.
    pub fn debris(&self) -> &Debris {
        &self.debris
    }

    /// The debris, to step it and to hand it pieces.
    pub fn debris_mut(&mut self) -> &mut Debris {
        &mut self.debris
    }

    /// Branches broken off since the last reset.
    pub fn branches_broken(&self) -> usize {
        self.broken
    }

    /// Trees uprooted since the last reset.
    pub fn trees_uprooted(&self) -> usize {
        self.uprooted
    }

    /// Whether anything broke or uprooted since the last reset.
    pub fn any(&self) -> bool {
        self.broken + self.uprooted > 0
    }

    /// Whether segment `i` belongs to a piece broken off or to an uprooted tree (it left the
    /// model for the debris).
    pub fn in_piece(&self, i: usize) -> bool {
        self.gone[i]
    }

    /// Per segment, [`in_piece`](Self::in_piece).
    pub fn gone(&self) -> &[bool] {
        &self.gone
    }

    /// Whether segment `i` still hangs from its parent (a root: stands on its roots): false
    /// for the first segment of a piece broken off and for an uprooted tree's root.
    pub fn attached(&self, i: usize) -> bool {
        !self.cut[i]
    }

    /// Records a piece: it broke off at the joint of `first` (a root: the tree uprooted,
    /// `uprooted`), and its `segments` (forest indices, `first` among them) left the tree.
    pub fn detach(&mut self, first: usize, segments: &[u32], uprooted: bool) {
        self.cut[first] = true;
        for &g in segments {
            self.gone[g as usize] = true;
        }
        if uprooted {
            self.uprooted += 1;
        } else {
            self.broken += 1;
        }
    }

    /// Back to nothing broken: every segment attached, no debris, the counts zero.
    pub fn clear(&mut self) {
        self.gone.fill(false);
        self.cut.fill(false);
        self.debris.clear();
        (self.broken, self.uprooted) = (0, 0);
    }

    /// The counts, as [`DynamicsModel::breakage`](super::DynamicsModel::breakage) reports them.
    pub fn report(&self) -> Breakage {
        Breakage {
            broken: self.broken,
            uprooted: self.uprooted,
            debris: self.debris.len(),
        }
    }

    /// Adds the gone flags and the debris's state to `h`, once anything broke (so a forest
    /// that never broke hashes as its trees alone).
    pub fn hash_state(&self, h: &mut StateHash) {
        if self.any() {
            h.add(self.gone.iter().map(|&g| if g { 1.0 } else { 0.0 }));
            self.debris.hash_state(h);
        }
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        use super::vec_bytes as b;
        b(&self.gone) + b(&self.cut) + self.debris.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece and an uprooting are counted apart; the first segment of each is cut, every
    /// segment of each gone; clearing restores everything.
    #[test]
    fn detach_counts_and_marks_and_clear_restores() {
        let mut b = BreakageState::new(6);
        assert!(!b.any() && (0..6).all(|i| b.attached(i) && !b.in_piece(i)));
        b.detach(3, &[3, 4], false);
        assert_eq!((b.branches_broken(), b.trees_uprooted()), (1, 0));
        assert!(!b.attached(3) && b.attached(4) && b.in_piece(3) && b.in_piece(4) && !b.in_piece(2));
        b.detach(0, &[0, 1, 2, 5], true);
        assert_eq!(
            b.report(),
            Breakage {
                broken: 1,
                uprooted: 1,
                debris: 0
            }
        );
        assert!(b.gone().iter().all(|&g| g));
        b.clear();
        assert!(!b.any() && (0..6).all(|i| b.attached(i) && !b.in_piece(i)));
    }
}
