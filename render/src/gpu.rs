//! The Vulkan device: instance, validation messages, device and queue selection, memory
//! allocation, and resources with deferred release.
//!
//! Sylva needs Vulkan 1.3 with dynamic rendering, synchronization2 and timeline semaphores
//! (every current desktop driver and Mesa's lavapipe have them).

use std::ffi::{c_void, CStr};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme, Allocator, AllocatorCreateDesc};
use gpu_allocator::MemoryLocation;
use raw_window_handle::{RawDisplayHandle, RawWindowHandle};

use crate::error::{vk_err, RenderError, Result};
use crate::queues::{choose_queues, ComputeQueue, FamilyInfo, QueueChoice};
use crate::timestamps::TimestampClock;

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// How to open the device.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Enable the Khronos validation layer; opening fails if it is not installed. Every error
    /// it reports is counted ([`Gpu::validation_errors`]) and printed.
    pub validation: bool,
    /// Pick the first device whose name contains this (case-insensitive) instead of the best.
    pub device_name: Option<String>,
}

/// A window to present to: its raw handles, which must stay valid for the [`Gpu`]'s lifetime.
#[derive(Clone, Copy, Debug)]
pub struct WindowHandles {
    pub display: RawDisplayHandle,
    pub window: RawWindowHandle,
}

/// What the validation layer said.
#[derive(Default)]
pub struct ValidationLog {
    errors: AtomicU64,
    warnings: AtomicU64,
    /// The first error messages, for test failures and reports.
    messages: Mutex<Vec<String>>,
}

const KEPT_MESSAGES: usize = 64;

impl ValidationLog {
    fn record(&self, error: bool, text: String) {
        if !error {
            self.warnings.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut m = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() < KEPT_MESSAGES {
            m.push(text);
        }
    }
}

/// Receives the validation layer's messages (called by the loader on any thread).
unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: `user` is the `ValidationLog` boxed in `Gpu`, which outlives the messenger (the
    // messenger is destroyed first in `Gpu::drop`); `data` and its message are valid for the
    // duration of the call, as the Vulkan specification guarantees.
    let (log, text) = unsafe {
        let log = &*(user as *const ValidationLog);
        let text = if data.is_null() || (*data).p_message.is_null() {
            String::from("(no message)")
        } else {
            CStr::from_ptr((*data).p_message).to_string_lossy().into_owned()
        };
        (log, text)
    };
    let error = severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR);
    eprintln!("Vulkan validation {}: {text}", if error { "error" } else { "warning" });
    log.record(error, text);
    vk::FALSE
}

/// A buffer and its memory.
pub struct Buffer {
    pub raw: vk::Buffer,
    pub size: u64,
    allocation: Allocation,
}

impl Buffer {
    /// The mapped bytes of a host-visible buffer.
    pub fn mapped(&mut self) -> Option<&mut [u8]> {
        self.allocation.mapped_slice_mut()
    }

    /// Copies `data` into a host-visible buffer at byte `offset`.
    ///
    /// # Panics
    ///
    /// If the buffer is not host-visible or the data does not fit (a renderer bug, not input).
    pub fn write<T: bytemuck::Pod>(&mut self, offset: usize, data: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let size = self.size;
        let m = self.mapped().expect("write to a buffer that is not host-visible");
        assert!(
            offset + bytes.len() <= m.len(),
            "write of {} bytes at {offset} to a {size}-byte buffer",
            bytes.len()
        );
        m[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// Reads a host-visible buffer.
    pub fn read(&self) -> &[u8] {
        self.allocation
            .mapped_slice()
            .expect("read from a buffer that is not host-visible")
    }
}

/// An image, its memory and a view of all of it.
pub struct Image {
    pub raw: vk::Image,
    pub view: vk::ImageView,
    pub extent: vk::Extent2D,
    pub format: vk::Format,
    pub aspect: vk::ImageAspectFlags,
    allocation: Allocation,
}

/// A resource waiting for the GPU to finish with it.
pub enum Resource {
    Buffer(Buffer),
    Image(Image),
}

impl From<Buffer> for Resource {
    fn from(b: Buffer) -> Self {
        Resource::Buffer(b)
    }
}
impl From<Image> for Resource {
    fn from(i: Image) -> Self {
        Resource::Image(i)
    }
}

/// Resources retired during a frame, destroyed once that frame's fence has signalled (the
/// renderer keeps one per frame in flight).
#[derive(Default)]
pub struct ReleaseList {
    items: Vec<Resource>,
}

impl ReleaseList {
    pub fn push(&mut self, r: impl Into<Resource>) {
        self.items.push(r.into());
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Destroys everything on the list. The caller has waited for the frame that used them.
    pub fn free(&mut self, gpu: &Gpu) {
        for r in self.items.drain(..) {
            match r {
                Resource::Buffer(b) => gpu.destroy_buffer(b),
                Resource::Image(i) => gpu.destroy_image(i),
            }
        }
    }
}

/// What a device object copied back to the CPU: how many read-backs, and their bytes in all
/// (the GPU dynamics' pose and state, the GPU wind's grid).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Downloads {
    pub count: u64,
    pub bytes: u64,
}

/// A [`Downloads`] counted through `&self` (a read-back on demand).
#[derive(Debug, Default)]
pub struct DownloadCounter {
    count: AtomicU64,
    bytes: AtomicU64,
}

impl DownloadCounter {
    /// Counts one read-back of `bytes` bytes.
    pub fn add(&self, bytes: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The read-backs counted so far.
    pub fn get(&self) -> Downloads {
        Downloads {
            count: self.count.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// The device and what comes with it.
pub struct Gpu {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub properties: vk::PhysicalDeviceProperties,
    pub queues: QueueChoice,
    /// The graphics (and present) queue. Submissions go through [`Gpu::submit`], which
    /// serialises them.
    graphics_queue: Mutex<vk::Queue>,
    /// The compute queue (the graphics queue when shared). Submissions go through
    /// [`Gpu::submit_compute`].
    pub compute_queue: vk::Queue,
    /// Serialises submissions to a compute queue of its own.
    compute_lock: Mutex<()>,
    /// The graphics queue's timestamp clock (`None` when it records no timestamps).
    pub timestamps: Option<TimestampClock>,
    pub surface_fn: ash::khr::surface::Instance,
    pub swapchain_fn: Option<ash::khr::swapchain::Device>,
    /// The window's surface, when opened for a window.
    pub surface: vk::SurfaceKHR,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Boxed so its address is stable for the messenger's callback.
    validation: Box<ValidationLog>,
    allocator: ManuallyDrop<Mutex<Allocator>>,
    live_allocations: AtomicU64,
}

/// A physical device that passed the checks, with what selection needs.
struct Candidate {
    physical: vk::PhysicalDevice,
    properties: vk::PhysicalDeviceProperties,
    queues: QueueChoice,
    timestamps: Option<TimestampClock>,
}

fn device_name(p: &vk::PhysicalDeviceProperties) -> String {
    p.device_name_as_c_str()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "(unnamed)".into())
}

fn version_text(v: u32) -> String {
    format!("{}.{}", vk::api_version_major(v), vk::api_version_minor(v))
}

impl Gpu {
    /// Opens the best Vulkan 1.3 device (discrete, then integrated, then any), for offscreen
    /// rendering when `window` is `None`, or able to present to `window`.
    pub fn new(options: &GpuOptions, window: Option<WindowHandles>) -> Result<Gpu> {
        // SAFETY: loading the Vulkan loader library runs its initialisers; the entry is kept
        // for the Gpu's lifetime, beyond every object created from it.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| RenderError::NoVulkan(e.to_string()))?;
        // SAFETY: plain queries on a loaded entry.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(vk_err("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_3 {
            return Err(RenderError::NoVulkan(format!(
                "the Vulkan loader supports version {}, Sylva needs 1.3",
                version_text(version)
            )));
        }

        let mut layers = Vec::new();
        if options.validation {
            // SAFETY: plain query on a loaded entry.
            let available = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(vk_err("vkEnumerateInstanceLayerProperties"))?;
            if !available
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER))
            {
                return Err(RenderError::NoValidationLayer);
            }
            layers.push(VALIDATION_LAYER.as_ptr());
        }
        let mut extensions = Vec::new();
        if let Some(w) = window {
            let required = ash_window::enumerate_required_extensions(w.display)
                .map_err(|e| RenderError::Surface(format!("this window system has no Vulkan surface ({e})")))?;
            extensions.extend_from_slice(required);
        } else {
            extensions.push(ash::khr::surface::NAME.as_ptr());
        }
        if options.validation {
            extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        // Portability drivers (MoltenVK on macOS) are listed only to an instance that asks for
        // them; asking is harmless where there are none.
        // SAFETY: plain query on a loaded entry.
        let portability = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(vk_err("vkEnumerateInstanceExtensionProperties"))?
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::portability_enumeration::NAME));
        if portability {
            extensions.push(ash::khr::portability_enumeration::NAME.as_ptr());
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"sylva")
            .engine_name(c"sylva")
            .api_version(vk::API_VERSION_1_3);
        let validation = Box::<ValidationLog>::default();
        let mut messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::ERROR | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(on_validation_message))
            .user_data(&*validation as *const ValidationLog as *mut c_void);
        let mut instance_info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        if portability {
            instance_info = instance_info.flags(vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR);
        }
        if options.validation {
            // Also catches messages from instance creation and destruction.
            instance_info = instance_info.push_next(&mut messenger_info);
        }
        // SAFETY: the create info and everything it points to live until the call returns.
        let instance = unsafe { entry.create_instance(&instance_info, None) }.map_err(|e| match e {
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => {
                RenderError::NoVulkan("no Vulkan driver is installed (the loader found none)".into())
            }
            vk::Result::ERROR_EXTENSION_NOT_PRESENT => {
                RenderError::NoVulkan("the driver lacks the surface extensions a window needs".into())
            }
            e => RenderError::from_vk("vkCreateInstance", e),
        })?;
        // From here on, `partial` destroys what exists if a later step fails.
        let debug = if options.validation {
            let f = ash::ext::debug_utils::Instance::new(&entry, &instance);
            // SAFETY: the instance is valid and was created with VK_EXT_debug_utils; the
            // callback's user data outlives the messenger (see `on_validation_message`).
            match unsafe { f.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(m) => Some((f, m)),
                Err(e) => {
                    // SAFETY: nothing else was created from the instance.
                    unsafe { instance.destroy_instance(None) };
                    return Err(RenderError::from_vk("vkCreateDebugUtilsMessengerEXT", e));
                }
            }
        } else {
            None
        };
        let surface_fn = ash::khr::surface::Instance::new(&entry, &instance);
        let destroy_instance = |surface: vk::SurfaceKHR| {
            // SAFETY: called only on failure paths, when no device exists and the surface (if
            // any) and messenger were created from this instance and are no longer used.
            unsafe {
                if surface != vk::SurfaceKHR::null() {
                    surface_fn.destroy_surface(surface, None);
                }
                if let Some((f, m)) = &debug {
                    f.destroy_debug_utils_messenger(*m, None);
                }
                instance.destroy_instance(None);
            }
        };
        let surface = match window {
            Some(w) => {
                // SAFETY: the caller guarantees the handles are valid for the Gpu's lifetime;
                // the instance has the extensions `enumerate_required_extensions` listed.
                match unsafe { ash_window::create_surface(&entry, &instance, w.display, w.window, None) } {
                    Ok(s) => s,
                    Err(e) => {
                        destroy_instance(vk::SurfaceKHR::null());
                        return Err(RenderError::Surface(format!("vkCreate*SurfaceKHR failed: {e}")));
                    }
                }
            }
            None => vk::SurfaceKHR::null(),
        };

        let chosen = match Self::pick_device(&instance, &surface_fn, surface, options) {
            Ok(c) => c,
            Err(e) => {
                destroy_instance(surface);
                return Err(e);
            }
        };
        let device = match Self::create_device(&instance, &chosen, window.is_some()) {
            Ok(d) => d,
            Err(e) => {
                destroy_instance(surface);
                return Err(e);
            }
        };
        // SAFETY: the families and indices were requested in `create_device`.
        let graphics_queue = unsafe { device.get_device_queue(chosen.queues.graphics, 0) };
        let compute_queue = match chosen.queues.compute {
            ComputeQueue::Shared => graphics_queue,
            // SAFETY: as above.
            _ => unsafe { device.get_device_queue(chosen.queues.compute_family(), 0) },
        };
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: instance.clone(),
            device: device.clone(),
            physical_device: chosen.physical,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        });
        let allocator = match allocator {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the device was just created and nothing was made from it.
                unsafe { device.destroy_device(None) };
                destroy_instance(surface);
                return Err(RenderError::from_alloc("creating the memory allocator", e));
            }
        };
        let swapchain_fn = window.map(|_| ash::khr::swapchain::Device::new(&instance, &device));
        Ok(Gpu {
            timestamps: chosen.timestamps,
            entry,
            physical: chosen.physical,
            properties: chosen.properties,
            queues: chosen.queues,
            graphics_queue: Mutex::new(graphics_queue),
            compute_queue,
            compute_lock: Mutex::new(()),
            surface_fn,
            swapchain_fn,
            surface,
            debug,
            validation,
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            live_allocations: AtomicU64::new(0),
            instance,
            device,
        })
    }

    fn pick_device(
        instance: &ash::Instance,
        surface_fn: &ash::khr::surface::Instance,
        surface: vk::SurfaceKHR,
        options: &GpuOptions,
    ) -> Result<Candidate> {
        // SAFETY: plain query on a valid instance.
        let physicals =
            unsafe { instance.enumerate_physical_devices() }.map_err(vk_err("vkEnumeratePhysicalDevices"))?;
        if physicals.is_empty() {
            return Err(RenderError::NoDevice(
                "the Vulkan loader lists no device; install a driver (mesa-vulkan-drivers provides lavapipe)".into(),
            ));
        }
        let mut rejected = Vec::new();
        let mut candidates = Vec::new();
        for physical in physicals {
            // SAFETY: `physical` was enumerated from this instance.
            let properties = unsafe { instance.get_physical_device_properties(physical) };
            let name = device_name(&properties);
            if let Some(wanted) = &options.device_name {
                if !name.to_lowercase().contains(&wanted.to_lowercase()) {
                    rejected.push(format!("{name}: not the device asked for (\"{wanted}\")"));
                    continue;
                }
            }
            if properties.api_version < vk::API_VERSION_1_3 {
                rejected.push(format!(
                    "{name}: Vulkan {}, needs 1.3",
                    version_text(properties.api_version)
                ));
                continue;
            }
            let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut features = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut f12)
                .push_next(&mut f13);
            // SAFETY: the output chain is valid for the call.
            unsafe { instance.get_physical_device_features2(physical, &mut features) };
            if f13.dynamic_rendering == vk::FALSE
                || f13.synchronization2 == vk::FALSE
                || f13.shader_demote_to_helper_invocation == vk::FALSE
                || f12.timeline_semaphore == vk::FALSE
            {
                rejected.push(format!(
                    "{name}: lacks one of dynamic rendering, synchronization2, demote to helper invocation, \
                     timeline semaphores"
                ));
                continue;
            }
            // SAFETY: plain query.
            let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
            let mut infos = Vec::with_capacity(families.len());
            for (i, f) in families.iter().enumerate() {
                let present = if surface == vk::SurfaceKHR::null() {
                    true
                } else {
                    // SAFETY: the surface and device belong to this instance.
                    unsafe { surface_fn.get_physical_device_surface_support(physical, i as u32, surface) }
                        .unwrap_or(false)
                };
                infos.push(FamilyInfo {
                    flags: f.queue_flags,
                    queue_count: f.queue_count,
                    present,
                    timestamps: f.timestamp_valid_bits > 0,
                });
            }
            let Some(queues) = choose_queues(&infos) else {
                rejected.push(format!(
                    "{name}: no queue family that draws{}",
                    if surface == vk::SurfaceKHR::null() {
                        ""
                    } else {
                        " and presents to the window"
                    }
                ));
                continue;
            };
            let timestamps = TimestampClock::new(
                families[queues.graphics as usize].timestamp_valid_bits,
                properties.limits.timestamp_period,
            );
            candidates.push(Candidate {
                physical,
                properties,
                queues,
                timestamps,
            });
        }
        let rank = |t: vk::PhysicalDeviceType| match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => 0,
            vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
            vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
            vk::PhysicalDeviceType::CPU => 3,
            _ => 4,
        };
        candidates.sort_by_key(|c| rank(c.properties.device_type));
        candidates
            .into_iter()
            .next()
            .ok_or_else(|| RenderError::NoDevice(rejected.join("; ")))
    }

    fn create_device(instance: &ash::Instance, c: &Candidate, window: bool) -> Result<ash::Device> {
        let priorities = [1.0f32];
        let mut queue_infos = vec![vk::DeviceQueueCreateInfo::default()
            .queue_family_index(c.queues.graphics)
            .queue_priorities(&priorities)];
        if c.queues.compute != ComputeQueue::Shared {
            queue_infos.push(
                vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(c.queues.compute_family())
                    .queue_priorities(&priorities),
            );
        }
        let mut extensions = if window {
            vec![ash::khr::swapchain::NAME.as_ptr()]
        } else {
            Vec::new()
        };
        // A portability device (MoltenVK) must have its subset extension enabled.
        // SAFETY: plain query on a physical device of this instance.
        let device_extensions = unsafe { instance.enumerate_device_extension_properties(c.physical) }
            .map_err(vk_err("vkEnumerateDeviceExtensionProperties"))?;
        if device_extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::portability_subset::NAME))
        {
            extensions.push(ash::khr::portability_subset::NAME.as_ptr());
        }
        // Demote-to-helper is what `discard` compiles to for Vulkan 1.3 (the leaves' alpha cut).
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
            .dynamic_rendering(true)
            .synchronization2(true)
            .shader_demote_to_helper_invocation(true);
        // Timeline semaphores order the wind solver's compute steps (`wind`).
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_infos)
            .enabled_extension_names(&extensions)
            .push_next(&mut f12)
            .push_next(&mut f13);
        // SAFETY: the physical device belongs to the instance and the features asked for were
        // checked in `pick_device`; the create info lives until the call returns.
        unsafe { instance.create_device(c.physical, &info, None) }.map_err(vk_err("vkCreateDevice"))
    }

    /// The device's name.
    pub fn name(&self) -> String {
        device_name(&self.properties)
    }

    /// The sample counts this device renders colour and depth targets with, both (framebuffer
    /// limits; dynamic rendering has the same ones).
    pub fn sample_counts(&self) -> vk::SampleCountFlags {
        let l = &self.properties.limits;
        l.framebuffer_color_sample_counts & l.framebuffer_depth_sample_counts
    }

    /// Whether this is a software rasteriser (lavapipe, SwiftShader).
    pub fn is_software(&self) -> bool {
        self.properties.device_type == vk::PhysicalDeviceType::CPU
    }

    /// Errors the validation layer reported so far (0 without validation).
    pub fn validation_errors(&self) -> u64 {
        self.validation.errors.load(Ordering::Relaxed)
    }

    /// Warnings the validation layer reported so far.
    pub fn validation_warnings(&self) -> u64 {
        self.validation.warnings.load(Ordering::Relaxed)
    }

    /// The first errors the validation layer reported.
    pub fn validation_messages(&self) -> Vec<String> {
        self.validation
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the validation layer is on.
    pub fn validating(&self) -> bool {
        self.debug.is_some()
    }

    fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocations alive now (buffers and images not yet destroyed).
    pub fn live_allocations(&self) -> u64 {
        self.live_allocations.load(Ordering::Relaxed)
    }

    /// Creates a buffer. `location` `CpuToGpu` or `GpuToCpu` buffers are persistently mapped.
    pub fn create_buffer(
        &self,
        name: &str,
        size: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
    ) -> Result<Buffer> {
        self.create_buffer_shared(name, size, usage, location, &[])
    }

    /// Creates a buffer as [`create_buffer`](Self::create_buffer), shared (`CONCURRENT`)
    /// between the queue families listed when they are two or more different ones, exclusive
    /// otherwise.
    pub fn create_buffer_shared(
        &self,
        name: &str,
        size: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
        families: &[u32],
    ) -> Result<Buffer> {
        let mut distinct: Vec<u32> = families.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        if size == 0 {
            return Err(RenderError::Invalid {
                what: "buffer size",
                value: "0".into(),
                allowed: "at least 1 byte".into(),
            });
        }
        let mut info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        if distinct.len() > 1 {
            info = info
                .sharing_mode(vk::SharingMode::CONCURRENT)
                .queue_family_indices(&distinct);
        }
        // SAFETY: valid device and create info.
        let raw = unsafe { self.device.create_buffer(&info, None) }.map_err(vk_err("vkCreateBuffer"))?;
        // SAFETY: `raw` was just created from this device.
        let requirements = unsafe { self.device.get_buffer_memory_requirements(raw) };
        let allocation = self.allocator().allocate(&AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the buffer is unused.
                unsafe { self.device.destroy_buffer(raw, None) };
                return Err(RenderError::from_alloc(
                    &format!("allocating buffer '{name}' of {size} bytes"),
                    e,
                ));
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements and is bound once.
        if let Err(e) = unsafe {
            self.device
                .bind_buffer_memory(raw, allocation.memory(), allocation.offset())
        } {
            // SAFETY: the buffer is unused.
            unsafe { self.device.destroy_buffer(raw, None) };
            let _ = self.allocator().free(allocation);
            return Err(RenderError::from_vk("vkBindBufferMemory", e));
        }
        self.live_allocations.fetch_add(1, Ordering::Relaxed);
        Ok(Buffer { raw, size, allocation })
    }

    /// Creates a 2D image with one mip level and a view of it.
    pub fn create_image(
        &self,
        name: &str,
        extent: vk::Extent2D,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
    ) -> Result<Image> {
        self.create_image_samples(name, extent, format, usage, vk::SampleCountFlags::TYPE_1)
    }

    /// The same as [`create_image`](Self::create_image) with `samples` samples per pixel (a
    /// multisampled render target; the caller checks the count against the device's limits,
    /// see [`sample_counts`](Self::sample_counts)).
    pub fn create_image_samples(
        &self,
        name: &str,
        extent: vk::Extent2D,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        samples: vk::SampleCountFlags,
    ) -> Result<Image> {
        let max = self.properties.limits.max_image_dimension2_d;
        if extent.width == 0 || extent.height == 0 || extent.width > max || extent.height > max {
            return Err(RenderError::Invalid {
                what: "image size",
                value: format!("{}x{}", extent.width, extent.height),
                allowed: format!("1 to {max} pixels on each side on this device"),
            });
        }
        let aspect = match format {
            vk::Format::D32_SFLOAT | vk::Format::D16_UNORM => vk::ImageAspectFlags::DEPTH,
            _ => vk::ImageAspectFlags::COLOR,
        };
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D {
                width: extent.width,
                height: extent.height,
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(samples)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid device and create info (size checked against the device's limit).
        let raw = unsafe { self.device.create_image(&info, None) }.map_err(vk_err("vkCreateImage"))?;
        // SAFETY: `raw` was just created from this device.
        let requirements = unsafe { self.device.get_image_memory_requirements(raw) };
        let allocation = self.allocator().allocate(&AllocationCreateDesc {
            name,
            requirements,
            location: MemoryLocation::GpuOnly,
            linear: false,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the image is unused.
                unsafe { self.device.destroy_image(raw, None) };
                return Err(RenderError::from_alloc(
                    &format!("allocating image '{name}' of {}x{}", extent.width, extent.height),
                    e,
                ));
            }
        };
        let view_info = vk::ImageViewCreateInfo::default()
            .image(raw)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(full_range(aspect));
        // SAFETY: the allocation satisfies the image's requirements; the view describes the
        // image's own format and its single level and layer.
        let bound = unsafe {
            self.device
                .bind_image_memory(raw, allocation.memory(), allocation.offset())
                .and_then(|_| self.device.create_image_view(&view_info, None))
        };
        match bound {
            Ok(view) => {
                self.live_allocations.fetch_add(1, Ordering::Relaxed);
                Ok(Image {
                    raw,
                    view,
                    extent,
                    format,
                    aspect,
                    allocation,
                })
            }
            Err(e) => {
                // SAFETY: the image is unused.
                unsafe { self.device.destroy_image(raw, None) };
                let _ = self.allocator().free(allocation);
                Err(RenderError::from_vk("vkBindImageMemory/vkCreateImageView", e))
            }
        }
    }

    /// Destroys a buffer now. The caller guarantees the GPU no longer uses it; otherwise put
    /// it on a [`ReleaseList`].
    pub fn destroy_buffer(&self, b: Buffer) {
        // SAFETY: the caller guarantees no pending GPU work uses the buffer.
        unsafe { self.device.destroy_buffer(b.raw, None) };
        let _ = self.allocator().free(b.allocation);
        self.live_allocations.fetch_sub(1, Ordering::Relaxed);
    }

    /// Destroys an image now, as [`destroy_buffer`](Self::destroy_buffer).
    pub fn destroy_image(&self, i: Image) {
        // SAFETY: the caller guarantees no pending GPU work uses the image or its view.
        unsafe {
            self.device.destroy_image_view(i.view, None);
            self.device.destroy_image(i.raw, None);
        }
        let _ = self.allocator().free(i.allocation);
        self.live_allocations.fetch_sub(1, Ordering::Relaxed);
    }

    /// Submits command buffers to the graphics queue.
    pub fn submit(&self, submits: &[vk::SubmitInfo2<'_>], fence: vk::Fence) -> Result<()> {
        let queue = self.graphics_queue.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is externally synchronised by the mutex; the submit infos and
        // their arrays live until the call returns; the caller recorded valid command buffers.
        unsafe { self.device.queue_submit2(*queue, submits, fence) }.map_err(vk_err("vkQueueSubmit2"))
    }

    /// Submits command buffers to the compute queue (the graphics queue when they are shared;
    /// either way submissions are serialised with every other submission to that queue).
    pub fn submit_compute(&self, submits: &[vk::SubmitInfo2<'_>], fence: vk::Fence) -> Result<()> {
        if self.queues.compute == ComputeQueue::Shared {
            return self.submit(submits, fence);
        }
        let _queue = self.compute_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the compute queue is externally synchronised by `compute_lock`; the submit
        // infos and their arrays live until the call returns; the caller recorded valid command
        // buffers for the compute family.
        unsafe { self.device.queue_submit2(self.compute_queue, submits, fence) }.map_err(vk_err("vkQueueSubmit2"))
    }

    /// Presents a swapchain image on the graphics queue.
    pub fn present(&self, info: &vk::PresentInfoKHR<'_>) -> Result<bool> {
        let swapchain_fn = self
            .swapchain_fn
            .as_ref()
            .expect("present needs a Gpu opened for a window");
        let queue = self.graphics_queue.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is externally synchronised by the mutex; the present info lives
        // until the call returns.
        unsafe { swapchain_fn.queue_present(*queue, info) }.map_err(vk_err("vkQueuePresentKHR"))
    }

    /// Waits until the device is idle.
    pub fn wait_idle(&self) -> Result<()> {
        let _queue = self.graphics_queue.lock().unwrap_or_else(|e| e.into_inner());
        let _compute = self.compute_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: both queue mutexes are held, so no submission races the wait.
        unsafe { self.device.device_wait_idle() }.map_err(vk_err("vkDeviceWaitIdle"))
    }

    /// Runs `record` in a one-time command buffer on the graphics queue and waits for it.
    pub fn run_once(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<()> {
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(self.queues.graphics)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT);
        // SAFETY: valid device and create info.
        let pool =
            unsafe { self.device.create_command_pool(&pool_info, None) }.map_err(vk_err("vkCreateCommandPool"))?;
        let result = (|| {
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            // SAFETY: the pool was just created from this device.
            let cmd =
                unsafe { self.device.allocate_command_buffers(&alloc) }.map_err(vk_err("vkAllocateCommandBuffers"))?[0];
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: a fresh command buffer, begun once.
            unsafe { self.device.begin_command_buffer(cmd, &begin) }.map_err(vk_err("vkBeginCommandBuffer"))?;
            record(cmd);
            // SAFETY: the buffer is in the recording state.
            unsafe { self.device.end_command_buffer(cmd) }.map_err(vk_err("vkEndCommandBuffer"))?;
            // SAFETY: valid device.
            let fence = unsafe { self.device.create_fence(&vk::FenceCreateInfo::default(), None) }
                .map_err(vk_err("vkCreateFence"))?;
            let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
            let submit = vk::SubmitInfo2::default().command_buffer_infos(&cmds);
            let waited = self.submit(&[submit], fence).and_then(|_| {
                // SAFETY: the fence was submitted above.
                unsafe { self.device.wait_for_fences(&[fence], true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))
            });
            // SAFETY: the fence has signalled or the submission failed; either way it is idle.
            unsafe { self.device.destroy_fence(fence, None) };
            waited
        })();
        if result.is_ok() {
            // SAFETY: the only command buffer of the pool has finished executing.
            unsafe { self.device.destroy_command_pool(pool, None) };
        } else {
            // The submission may still be pending after an error: wait before destroying.
            let _ = self.wait_idle();
            // SAFETY: the device is idle.
            unsafe { self.device.destroy_command_pool(pool, None) };
        }
        result
    }

    /// Creates a shader module from SPIR-V.
    pub fn shader_module(&self, spirv: &sylva_shaders::Spirv) -> Result<vk::ShaderModule> {
        let words = spirv.words();
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        // SAFETY: the words are SPIR-V compiled by shaderc at build time.
        unsafe { self.device.create_shader_module(&info, None) }.map_err(vk_err("vkCreateShaderModule"))
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.wait_idle();
        // SAFETY: the device is idle, every resource made through the Gpu has been handed back
        // (their owners drop before the Gpu), and objects are destroyed children first.
        unsafe {
            ManuallyDrop::drop(&mut self.allocator);
            self.device.destroy_device(None);
            if self.surface != vk::SurfaceKHR::null() {
                self.surface_fn.destroy_surface(self.surface, None);
            }
            if let Some((f, m)) = self.debug.take() {
                f.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// The whole of a single-level, single-layer image.
pub fn full_range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}
