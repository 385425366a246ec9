//! Queue family selection, kept apart from Vulkan calls so it can be tested without a device.
//!
//! Sylva needs one family that does graphics (and presents, for a window). Async compute (the
//! wind grid and dynamics of later passes) prefers a *dedicated* compute family: one with
//! compute but no graphics, which on discrete GPUs runs beside the graphics queue. Failing
//! that, a second queue of another compute-capable family, and failing that the graphics
//! queue itself (lavapipe has a single family with a single queue).

use ash::vk;

/// What Sylva needs to know of a queue family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FamilyInfo {
    pub flags: vk::QueueFlags,
    pub queue_count: u32,
    /// Whether the family can present to the window's surface (true when there is no window).
    pub present: bool,
    /// Whether the family records timestamps (`timestampValidBits > 0`).
    pub timestamps: bool,
}

/// Where the compute work goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeQueue {
    /// A family with compute and no graphics.
    Dedicated { family: u32 },
    /// Another graphics-capable family than the main one (some devices expose two).
    Separate { family: u32 },
    /// The graphics queue itself.
    Shared,
}

/// The chosen families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueChoice {
    pub graphics: u32,
    pub compute: ComputeQueue,
}

impl QueueChoice {
    /// The compute family index (the graphics family when shared).
    pub fn compute_family(&self) -> u32 {
        match self.compute {
            ComputeQueue::Dedicated { family } | ComputeQueue::Separate { family } => family,
            ComputeQueue::Shared => self.graphics,
        }
    }
}

/// Picks the graphics family (graphics + present, preferring one that records timestamps) and
/// the compute family as described in the module documentation. `None` when no family can
/// draw (and present).
pub fn choose_queues(families: &[FamilyInfo]) -> Option<QueueChoice> {
    let usable = |f: &FamilyInfo| f.queue_count > 0;
    let graphics_ok = |f: &FamilyInfo| usable(f) && f.flags.contains(vk::QueueFlags::GRAPHICS) && f.present;
    let graphics = families
        .iter()
        .enumerate()
        .filter(|(_, f)| graphics_ok(f))
        // First the ones with timestamps, then the lowest index.
        .min_by_key(|(i, f)| (!f.timestamps, *i))
        .map(|(i, _)| i as u32)?;
    let compute_ok = |f: &FamilyInfo| usable(f) && f.flags.contains(vk::QueueFlags::COMPUTE);
    let dedicated = families
        .iter()
        .enumerate()
        .filter(|(_, f)| compute_ok(f) && !f.flags.contains(vk::QueueFlags::GRAPHICS))
        .min_by_key(|(i, f)| (!f.timestamps, *i))
        .map(|(i, _)| i as u32);
    let compute = if let Some(family) = dedicated {
        ComputeQueue::Dedicated { family }
    } else if let Some(family) = families
        .iter()
        .enumerate()
        .position(|(i, f)| i as u32 != graphics && compute_ok(f))
        .map(|i| i as u32)
    {
        ComputeQueue::Separate { family }
    } else {
        ComputeQueue::Shared
    };
    Some(QueueChoice { graphics, compute })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: vk::QueueFlags = vk::QueueFlags::GRAPHICS;
    const C: vk::QueueFlags = vk::QueueFlags::COMPUTE;
    const T: vk::QueueFlags = vk::QueueFlags::TRANSFER;

    fn fam(flags: vk::QueueFlags, count: u32) -> FamilyInfo {
        FamilyInfo {
            flags,
            queue_count: count,
            present: true,
            timestamps: true,
        }
    }

    #[test]
    fn lavapipe_single_family_shares_the_graphics_queue() {
        let families = [fam(G | C | T, 1)];
        assert_eq!(
            choose_queues(&families),
            Some(QueueChoice {
                graphics: 0,
                compute: ComputeQueue::Shared
            })
        );
    }

    #[test]
    fn discrete_gpu_gets_its_dedicated_compute_family() {
        // The usual desktop layout: graphics+compute, transfer only, compute only.
        let families = [fam(G | C | T, 16), fam(T, 2), fam(C | T, 8)];
        let choice = choose_queues(&families).unwrap();
        assert_eq!(
            choice,
            QueueChoice {
                graphics: 0,
                compute: ComputeQueue::Dedicated { family: 2 }
            }
        );
        assert_eq!(choice.compute_family(), 2);
    }

    #[test]
    fn dedicated_compute_is_preferred_wherever_it_is_listed() {
        let families = [fam(C, 4), fam(G | C, 1)];
        let choice = choose_queues(&families).unwrap();
        assert_eq!(
            choice,
            QueueChoice {
                graphics: 1,
                compute: ComputeQueue::Dedicated { family: 0 }
            }
        );
    }

    #[test]
    fn a_second_graphics_family_serves_compute_when_none_is_dedicated() {
        let families = [fam(G | C, 1), fam(G | C, 1)];
        assert_eq!(
            choose_queues(&families),
            Some(QueueChoice {
                graphics: 0,
                compute: ComputeQueue::Separate { family: 1 }
            })
        );
    }

    #[test]
    fn graphics_needs_present_and_prefers_timestamps() {
        let mut no_present = fam(G | C, 1);
        no_present.present = false;
        let mut no_time = fam(G | C, 1);
        no_time.timestamps = false;
        let families = [no_present, no_time, fam(G | C, 1)];
        assert_eq!(choose_queues(&families).unwrap().graphics, 2);
        assert_eq!(choose_queues(&[no_present, no_time]).unwrap().graphics, 1);
    }

    #[test]
    fn no_graphics_family_means_no_choice() {
        assert_eq!(choose_queues(&[fam(C | T, 4), fam(T, 1)]), None);
        assert_eq!(choose_queues(&[fam(G, 0)]), None);
        assert_eq!(choose_queues(&[]), None);
    }
}
