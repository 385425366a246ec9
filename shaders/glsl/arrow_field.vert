#version 450
#include "common.glsl"
#include "arrow.glsl"

// Wind-field arrows read straight from the GPU wind solver's velocity buffer (render/src/wind.rs,
// layout in wind_common.glsl): instance a is the a-th sample cell of the layer, in the order and
// with the length, width and colour scale of the CPU-built arrows (render/src/field.rs).

// `ArrowFieldPush` in shaders/src/lib.rs.
layout(push_constant, std430) uniform Push {
    uvec4 n;        // cells nx, ny, nz; w: the layer
    uvec4 sampling; // x: stride between sample cells, y: first sample cell, z: samples along x
    uvec4 offsets;  // first float of u, v, w in the velocity buffer
    vec4 origin;    // minimum corner of the domain
    vec4 h;         // cell size
    vec4 scale;     // x: arrow length per m/s, y: shaft width, z: 1 / speed at the red end
} pc;

layout(set = 1, binding = 0, std430) readonly buffer Velocity { float vel[]; };

layout(location = 0) out float out_speed;

void main() {
    uint a = uint(gl_InstanceIndex);
    uint i = pc.sampling.y + pc.sampling.x * (a % pc.sampling.z);
    uint k = pc.sampling.y + pc.sampling.x * (a / pc.sampling.z);
    uint j = pc.n.w;
    uint nx = pc.n.x, ny = pc.n.y;
    // Cell-centred velocity: the mean of the cell's two faces per axis (as FluidGrid does).
    uint u = pc.offsets.x + i + (nx + 1u) * (j + ny * k);
    uint v = pc.offsets.y + i + nx * (j + (ny + 1u) * k);
    uint w = pc.offsets.z + i + nx * (j + ny * k);
    vec3 wind = vec3(
        0.5 * (vel[u] + vel[u + 1u]),
        0.5 * (vel[v] + vel[v + nx]),
        0.5 * (vel[w] + vel[w + nx * ny]));
    vec3 centre = pc.origin.xyz + (vec3(i, j, k) + 0.5) * pc.h.xyz;
    vec3 vector = wind * pc.scale.x;
    vec3 world = arrow_corner(centre - 0.5 * vector, vector, pc.scale.y, gl_VertexIndex);
    out_speed = length(wind) * pc.scale.z;
    gl_Position = frame.view_proj * vec4(world, 1.0);
}
