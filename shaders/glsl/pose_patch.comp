#version 450
// Fills in the pose of a frame's instances from a pose in a device buffer, one invocation per
// instance: the GPU dynamics' output (render/src/device_pose.rs), or a pose on the CPU uploaded
// with the frame (`HostPose` in render/src/frame.rs). The frame was filled with the segment and
// leaf indices where the pose goes (render/src/frame.rs), kept on the device as templates, and
// this writes the instances drawn: what `RenderFrame::fill` writes from a pose on the CPU.
//
// Instances (sylva_shaders::SegmentInstance, LeafInstance, 32 bytes each, read as words):
//   segment: a = (index i, -, -, base radius)             -> a.xyz = base of i
//   leaf:    a = (leaf j, segment i or ~0, along, length) -> a.xyz = position of j, or the base
//            of i moved `along` its axis when i is given (a strided leaf of a distant tree)
//   both:    b.xy = the orientation (segment i's, leaf j's) packed as the CPU packs it
//            (`pack_snorm4`: times 32767, truncated towards zero, saturated).
// Pose (vec4s): bases [0, n), orientations [n, 2n), leaf positions [2n, 2n + m), leaf
// orientations [2n + m, 2n + 2m).
//
// Rigid leaves (m = 0: a model whose leaves do not turn on their segments): the pose holds the
// segments alone; every leaf names its segment i, sits `along` i's axis, and its template's
// b.xy holds its rest orientation in i's frame (snorm16, as the forest stores it), which the
// patch turns with i: q = q_i * rest, as `Pose::leaf_orientation` gives it on the CPU.

layout(local_size_x = 64) in;

// `PosePatchPush` in shaders/src/lib.rs.
layout(push_constant, std430) uniform Push {
    uvec4 counts; // x: segments n, y: leaves m (0: rigid leaves), z: segment instances, w: leaf instances
} pc;

struct Instance {
    uvec4 a;
    uvec4 b;
};

layout(set = 0, binding = 0, std430) readonly buffer Pose { vec4 pose[]; };
layout(set = 0, binding = 1, std430) readonly buffer Templates { Instance templ[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Drawn { Instance drawn[]; };

// Rotates v by the unit quaternion q (xyzw), in the arithmetic of glam's `Quat * Vec3`.
vec3 rotate(vec4 q, vec3 v) {
    vec3 b = q.xyz;
    return v * (q.w * q.w - dot(b, b)) + b * (dot(v, b) * 2.0) + cross(b, v) * (q.w * 2.0);
}

// The Hamilton product a * b of quaternions (xyzw), in the arithmetic of glam's `Quat * Quat`.
vec4 qmul(vec4 a, vec4 b) {
    return vec4(
        a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
        a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
        a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}

// A rest orientation as the forest stores it (snorm16 words x, y then z, w), times 1/32767 as
// the CPU fill reads it (not clamped: -32768 reads as a little under -1, as on the CPU).
vec4 rest_orient(uvec2 w) {
    ivec4 s = ivec4(int(w.x << 16) >> 16, int(w.x) >> 16, int(w.y << 16) >> 16, int(w.y) >> 16);
    return vec4(s) * (1.0 / 32767.0);
}

uint snorm2(float x, float y) {
    ivec2 s = ivec2(clamp(vec2(x, y) * 32767.0, -32768.0, 32767.0));
    return (uint(s.x) & 0xFFFFu) | (uint(s.y) << 16);
}

uvec2 pack_orient(vec4 q) {
    return uvec2(snorm2(q.x, q.y), snorm2(q.z, q.w));
}

void main() {
    uint k = gl_GlobalInvocationID.x;
    uint n = pc.counts.x;
    uint m = pc.counts.y;
    uint segments = pc.counts.z;
    if (k >= segments + pc.counts.w) {
        return;
    }
    uvec4 a = templ[k].a;
    uvec4 b = templ[k].b;
    vec3 p;
    vec4 q;
    if (k < segments) {
        uint i = min(a.x, n - 1u);
        p = pose[i].xyz;
        q = pose[n + i];
    } else if (m == 0u) {
        // A rigid leaf: along its segment, turned with it.
        uint i = min(a.y, n - 1u);
        q = pose[n + i];
        p = pose[i].xyz + rotate(q, vec3(0.0, uintBitsToFloat(a.z), 0.0));
        q = qmul(q, rest_orient(b.xy));
    } else {
        uint j = min(a.x, m - 1u);
        if (a.y == 0xFFFFFFFFu) {
            p = pose[2u * n + j].xyz;
        } else {
            uint i = min(a.y, n - 1u);
            p = pose[i].xyz + rotate(pose[n + i], vec3(0.0, uintBitsToFloat(a.z), 0.0));
        }
        q = pose[2u * n + m + j];
    }
    drawn[k] = Instance(uvec4(floatBitsToUint(p), a.w), uvec4(pack_orient(q), b.zw));
}
