//! Temporal level of detail: which trees step at a model step, and by how long.
//!
//! Weber 2008 (Results, after Table 2) names the way to a forest in real time: distance metrics
//! from the camera "would allow much of the plants to be still, ... or to be simplified with
//! variable physical resolution" (after Beaudoin & Keyser 2004, "Simulation Levels of Detail of
//! Plant Motion"). Here the resolution is in time: tree `t` with period `p` steps once in `p`
//! model steps, by the time it has fallen behind, so a far tree costs `1/p` of a near one.
//!
//! Invariants:
//! - a tree with period `p` steps at model step `n` when `(n + t) % p == 0` (the trees of one
//!   period are staggered, so every model step does about the same work) or when it is `p`
//!   steps behind (after its period changed); it then steps by every model step it missed, so
//!   its clock is never more than `p − 1` steps behind the model's and never ahead;
//! - with every period 1 every tree steps every step by one step: the model's step unchanged;
//! - the plan depends on the step count and the periods only, never on the threads, so a
//!   model's state stays the same for any number of workers.
//!
//! The caller chooses the periods (the viewer from each tree's size on screen); a model that
//! keeps a schedule takes them through `DynamicsModel::set_step_periods`.

use crate::error::SimError;

/// The longest period a tree may have: at the viewer's 60 steps per second, 7.5 steps per
/// second.
pub const MAX_STEP_PERIOD: u8 = 8;

/// Per tree: its period, how far it is behind and what it does this step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSchedule {
    period: Vec<u8>,
    /// Model steps since the tree's clock last advanced.
    behind: Vec<u8>,
    /// This step: the model steps the tree advances by (0: it holds its pose).
    now: Vec<u8>,
}

impl StepSchedule {
    /// Every one of `trees` trees at period 1.
    pub fn new(trees: usize) -> StepSchedule {
        StepSchedule {
            period: vec![1; trees],
            behind: vec![0; trees],
            now: vec![1; trees],
        }
    }

    /// Sets every tree's period; refuses a list of another length or a period outside
    /// `1..=MAX_STEP_PERIOD`, keeping the old periods.
    pub fn set_periods(&mut self, periods: &[u8]) -> Result<(), SimError> {
        if periods.len() != self.period.len() {
            return Err(SimError::param(
                "step periods",
                format!("{} values", periods.len()),
                format!("one per tree: {} values", self.period.len()),
            ));
        }
        if let Some((t, &p)) = periods
            .iter()
            .enumerate()
            .find(|(_, &p)| !(1..=MAX_STEP_PERIOD).contains(&p))
        {
            return Err(SimError::param(
                "step period",
                p,
                format!("tree {t}: must be a whole number of steps from 1 to {MAX_STEP_PERIOD}"),
            ));
        }
        self.period.copy_from_slice(periods);
        Ok(())
    }

    /// Each tree's period.
    pub fn periods(&self) -> &[u8] {
        &self.period
    }

    /// Whether every tree steps every step.
    pub fn full_rate(&self) -> bool {
        self.period.iter().all(|&p| p == 1)
    }

    /// Plans model step `n` (the count of steps taken before it): afterwards
    /// [`steps_of`](Self::steps_of) says what each tree does.
    pub fn plan(&mut self, n: u64) {
        for (t, ((&p, behind), now)) in self.period.iter().zip(&mut self.behind).zip(&mut self.now).enumerate() {
            *behind = behind.saturating_add(1);
            let turn = (n.wrapping_add(t as u64)) % p as u64 == 0;
            if p == 1 || turn || *behind >= p {
                *now = *behind;
                *behind = 0;
            } else {
                *now = 0;
            }
        }
    }

    /// How many model steps tree `t` advances by in the planned step (0: it holds).
    pub fn steps_of(&self, t: usize) -> u8 {
        self.now[t]
    }

    /// Trees advancing in the planned step.
    pub fn stepping(&self) -> usize {
        self.now.iter().filter(|&&k| k > 0).count()
    }

    /// Every tree's clock at the model's (after a reset of the trees' state): nothing owed.
    pub fn catch_up(&mut self) {
        self.behind.fill(0);
        self.now.fill(1);
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.period.capacity() + self.behind.capacity() + self.now.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `steps` planned steps and returns, per tree, the model steps it advanced by in all.
    fn advanced(s: &mut StepSchedule, from: u64, steps: u64) -> Vec<u64> {
        let mut sum = vec![0u64; s.periods().len()];
        for n in from..from + steps {
            s.plan(n);
            for (t, v) in sum.iter_mut().enumerate() {
                *v += s.steps_of(t) as u64;
            }
        }
        sum
    }

    #[test]
    fn every_tree_at_period_one_steps_every_step_by_one() {
        let mut s = StepSchedule::new(5);
        for n in 0..10 {
            s.plan(n);
            assert!((0..5).all(|t| s.steps_of(t) == 1));
        }
    }

    #[test]
    fn a_tree_steps_once_per_period_staggered_and_its_clock_keeps_up() {
        let mut s = StepSchedule::new(8);
        s.set_periods(&[1, 2, 4, 4, 4, 4, 8, 8]).unwrap();
        // After the first period's catch-up, each tree steps by exactly its period.
        advanced(&mut s, 0, 8);
        let mut per_step = Vec::new();
        for n in 8..40 {
            s.plan(n);
            for t in 0..8 {
                let k = s.steps_of(t);
                assert!(k == 0 || k == s.periods()[t], "tree {t} step {n}: by {k}");
            }
            // The four period-4 trees stagger: one of them steps at every step.
            assert_eq!((2..6).filter(|&t| s.steps_of(t) > 0).count(), 1, "step {n}");
            per_step.push(s.stepping());
        }
        assert!(per_step.iter().all(|&k| (2..=5).contains(&k)), "{per_step:?}");
        // Over whole periods every clock advances by the model's steps.
        let total = advanced(&mut s, 40, 64);
        assert_eq!(total, vec![64; 8]);
    }

    #[test]
    fn a_changed_period_owes_no_step_and_lags_at_most_a_period() {
        let mut s = StepSchedule::new(3);
        let mut owed = [0u64; 3];
        let mut n = 0;
        for periods in [[4, 8, 1], [1, 2, 8], [8, 4, 2], [1, 1, 1]] {
            s.set_periods(&periods).unwrap();
            for _ in 0..13 {
                s.plan(n);
                n += 1;
                for (t, o) in owed.iter_mut().enumerate() {
                    *o = *o + 1 - s.steps_of(t) as u64;
                    assert!(*o < MAX_STEP_PERIOD as u64, "tree {t} behind by {o}");
                }
            }
        }
        // Back at period 1, every clock is the model's.
        assert_eq!(owed, [0; 3]);
    }

    #[test]
    fn periods_out_of_range_or_of_the_wrong_count_are_refused_and_kept() {
        let mut s = StepSchedule::new(2);
        s.set_periods(&[2, 4]).unwrap();
        let e = s.set_periods(&[0, 1]).unwrap_err().to_string();
        assert!(e.contains("step period") && e.contains("1 to 8"), "{e}");
        let e = s.set_periods(&[9, 1]).unwrap_err().to_string();
        assert!(e.contains("tree 0"), "{e}");
        let e = s.set_periods(&[1]).unwrap_err().to_string();
        assert!(e.contains("one per tree: 2"), "{e}");
        assert_eq!(s.periods(), &[2, 4]);
    }
}
