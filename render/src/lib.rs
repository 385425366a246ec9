//! Sylva's Vulkan renderer.
//!
//! * [`gpu`]: the device layer: instance, validation, device and queue selection
//!   ([`queues`]), memory through gpu-allocator, buffers and images, deferred release.
//! * [`renderer`]: shadow and main passes drawing a [`frame::RenderFrame`] with instanced
//!   meshes ([`mesh`]), the overlay ([`overlay`]) and GPU timestamps.
//! * [`field`]: the wind grid drawn as arrows on a horizontal slice.
//! * [`cache`]: the double-buffered render command cache between the simulation and render
//!   threads.
//! * [`swapchain`]: presenting to a window.
//! * [`device_pose`], [`shared_buffer`], [`timeline`]: a pose the GPU dynamics leave on the
//!   device for the renderer to draw, with the buffer and timeline semaphore the two share.
//! * [`timestamps`]: reading GPU timestamps into pass timings, for the renderer and the wind
//!   solver alike.
//! * [`wind`]: the wind grid's stable-fluids solver as compute shaders, the twin of
//!   `sylva_sim::fluid`.
//!
//! Every Vulkan call, and so most of Sylva's `unsafe`, is in this crate, which allows
//! `unsafe_code` (denied elsewhere in the workspace but in `engine`'s job erasure and `sim`'s
//! AVX2 fluid kernels); each `unsafe` block is preceded by a safety comment saying why it is
//! sound (clippy's `undocumented_unsafe_blocks`, denied).

#![allow(unsafe_code)]

pub mod cache;
pub mod camera;
pub(crate) mod descriptors;
pub mod device_pose;
pub mod dynamics;
pub mod error;
pub mod field;
pub mod frame;
pub mod gpu;
pub mod mesh;
pub mod overlay;
pub mod pipeline;
pub mod queues;
pub mod renderer;
pub mod shared_buffer;
pub mod swapchain;
pub mod timeline;
pub mod timestamps;
pub mod wind;

pub use ash::vk;
pub use device_pose::DevicePose;
pub use dynamics::{GpuOliapuram, WindSource as DynamicsWindSource};
pub use error::{RenderError, Result};
pub use frame::{Camera, LodSettings, RenderFrame};
pub use gpu::{Downloads, Gpu, GpuOptions, WindowHandles};
pub use renderer::{DrawOptions, Output, Renderer, RendererOptions, Rgba};
pub use wind::{FieldBuffers, GpuFluid, GpuWind};
