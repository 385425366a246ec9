//! GPU timestamps: reading a timestamp query pool and turning two ticks into a duration. Every
//! GPU timing in Sylva (the renderer's passes, the wind solver's passes) is read here.
//!
//! A queue family's timestamps have `timestampValidBits` meaningful bits
//! (`VkQueueFamilyProperties`), and a later timestamp is lower than an earlier one only when
//! the counter overflows those bits (`vkCmdWriteTimestamp2`). So a read timestamp is kept to
//! its valid bits, the time between two is their difference modulo `2^bits` (right across one
//! overflow), and only then is it scaled by the device's `timestampPeriod`, nanoseconds per
//! tick (`VkPhysicalDeviceLimits`).

use std::time::Duration;

use ash::vk;

use crate::error::{RenderError, Result};

/// The tick counter of one queue family: which bits of a timestamp count, and how long a
/// tick is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimestampClock {
    /// `2^valid_bits − 1`.
    mask: u64,
    /// Nanoseconds per tick.
    period_ns: f64,
}

impl TimestampClock {
    /// The clock of a queue family whose timestamps have `valid_bits` meaningful bits, on a
    /// device whose ticks last `period_ns` nanoseconds. `None` when the family writes no
    /// timestamps (0 bits) or the period is not a positive finite number.
    pub fn new(valid_bits: u32, period_ns: f32) -> Option<Self> {
        if valid_bits == 0 || !(period_ns.is_finite() && period_ns > 0.0) {
            return None;
        }
        let mask = if valid_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << valid_bits) - 1
        };
        Some(Self {
            mask,
            period_ns: period_ns as f64,
        })
    }

    /// The clock of queue family `family` of the physical device `physical`, whose ticks last
    /// `period_ns` (`None` as for [`new`](Self::new), or when there is no such family).
    pub fn of_family(
        instance: &ash::Instance,
        physical: vk::PhysicalDevice,
        family: u32,
        period_ns: f32,
    ) -> Option<Self> {
        // SAFETY: a plain query on a physical device of this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let bits = families.get(family as usize)?.timestamp_valid_bits;
        Self::new(bits, period_ns)
    }

    /// The time from timestamp `a` to the later timestamp `b`, across at most one overflow of
    /// the counter.
    pub fn span(&self, a: u64, b: u64) -> Duration {
        let ticks = b.wrapping_sub(a) & self.mask;
        Duration::from_nanos((ticks as f64 * self.period_ns) as u64)
    }

    /// Reads the first `ticks.len()` timestamps of `pool` into `ticks`, each kept to its
    /// valid bits. Without `wait`, returns `Ok(false)` (and `ticks` holds nothing meaningful)
    /// when some of them are not written yet; with `wait`, blocks until they are.
    ///
    /// # Safety
    /// `pool` is a timestamp query pool of `device` holding at least `ticks.len()` queries,
    /// written on a queue of this clock's family and not reset or destroyed during the call;
    /// with `wait`, every one of those queries has been submitted to be written.
    pub unsafe fn read(
        &self,
        device: &ash::Device,
        pool: vk::QueryPool,
        ticks: &mut [u64],
        wait: bool,
    ) -> Result<bool> {
        let flags = if wait {
            vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT
        } else {
            vk::QueryResultFlags::TYPE_64
        };
        // SAFETY: the caller's contract: the pool belongs to `device`, holds these queries, and
        // with WAIT they will be written.
        match unsafe { device.get_query_pool_results(pool, 0, ticks, flags) } {
            Ok(()) => {}
            Err(vk::Result::NOT_READY) if !wait => return Ok(false),
            Err(e) => return Err(RenderError::from_vk("vkGetQueryPoolResults", e)),
        }
        for t in ticks.iter_mut() {
            *t &= self.mask;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_clock_without_bits_or_period() {
        assert_eq!(TimestampClock::new(0, 1.0), None);
        assert_eq!(TimestampClock::new(64, 0.0), None);
        assert_eq!(TimestampClock::new(64, -1.0), None);
        assert_eq!(TimestampClock::new(64, f32::NAN), None);
        assert_eq!(TimestampClock::new(64, f32::INFINITY), None);
    }

    #[test]
    fn span_scales_ticks_by_the_period() {
        let c = TimestampClock::new(64, 2.5).unwrap();
        assert_eq!(c.span(1_000, 1_400), Duration::from_nanos(1_000));
        assert_eq!(c.span(7, 7), Duration::ZERO);
    }

    #[test]
    fn span_across_an_overflow_of_the_valid_bits() {
        // A 36-bit counter (common on desktop GPUs) read 16 ticks before and 48 ticks after
        // it overflows: 64 ticks passed. Without the mask, b − a wraps to nearly 2^64 ticks
        // (or saturates to 0), which is what an unmasked reader reported.
        let c = TimestampClock::new(36, 1.0).unwrap();
        let a = (1u64 << 36) - 16;
        let b = 48;
        assert_eq!(c.span(a, b), Duration::from_nanos(64));
        // Bits above the valid ones do not change the span.
        assert_eq!(
            c.span(a | (0xABu64 << 40), b | (0x5u64 << 50)),
            Duration::from_nanos(64)
        );
        // A full 64-bit counter wraps at 2^64.
        let full = TimestampClock::new(64, 1.0).unwrap();
        assert_eq!(full.span(u64::MAX - 9, 20), Duration::from_nanos(30));
    }

    #[test]
    fn one_valid_bit_and_the_widest_mask() {
        let c = TimestampClock::new(1, 10.0).unwrap();
        assert_eq!(c.span(1, 0), Duration::from_nanos(10));
        assert_eq!(c.mask, 1);
        assert_eq!(TimestampClock::new(63, 1.0).unwrap().mask, u64::MAX >> 1);
        assert_eq!(TimestampClock::new(100, 1.0).unwrap().mask, u64::MAX);
    }
}
