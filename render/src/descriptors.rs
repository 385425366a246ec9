//! Storage-buffer descriptors of the compute passes (the GPU wind, its PCG solver, the GPU
//! dynamics): a set layout of `n` storage buffers seen by compute shaders, and the writes that
//! point a set's bindings at whole buffers.

use ash::vk;

use crate::error::{vk_err, Result};

/// A descriptor set layout of `count` storage buffers, bindings `0..count`, for compute shaders.
pub(crate) fn storage_set_layout(dev: &ash::Device, count: u32) -> Result<vk::DescriptorSetLayout> {
    let bindings: Vec<_> = (0..count)
        .map(|i| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(i)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    // SAFETY: valid device and create info.
    unsafe { dev.create_descriptor_set_layout(&info, None) }.map_err(vk_err("vkCreateDescriptorSetLayout"))
}

/// The whole of `buffer`, as a storage binding's buffer info.
pub(crate) fn whole(buffer: vk::Buffer) -> [vk::DescriptorBufferInfo; 1] {
    [vk::DescriptorBufferInfo {
        buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }]
}

/// Points each (set, binding) at its buffer.
///
/// # Safety
/// Every set and buffer must be alive, and no pending or recorded command buffer may use the
/// sets.
pub(crate) unsafe fn write_storage(
    dev: &ash::Device,
    infos: &[(vk::DescriptorSet, u32, [vk::DescriptorBufferInfo; 1])],
) {
    let writes: Vec<_> = infos
        .iter()
        .map(|(set, binding, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(*binding)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(info)
        })
        .collect();
    // SAFETY: the caller's contract.
    unsafe { dev.update_descriptor_sets(&writes, &[]) };
}
