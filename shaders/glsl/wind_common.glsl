// The wind solver's shared declarations: the GPU twin of `sylva_sim::fluid` (stable fluids on a
// MAC grid, Oliapuram & Kumar 2010, paper 004 §2). The discretisation is the one in the module
// docs of `sim/src/fluid/mod.rs`; each kernel follows the CPU solver's arithmetic order so the
// two agree to float rounding.
//
// Layout (all std430 float arrays):
// * velocity: u (nx+1)×ny×nz, then v nx×(ny+1)×nz, then w nx×ny×(nz+1), each indexed
//   i + dimx*(j + dimy*k) (`u_base`, `v_base`, `w_base`).
// * act and pressure: padded cell arrays with one ghost layer all round, index
//   (i+1) + (nx+2)*((j+1) + (ny+2)*(k+1)); pressure stays 0 at ghosts and solid cells.
// * centre velocity (vec4), inverse diagonal, divergence and vorticity (vec4): unpadded cell
//   order.
//
// Workgroups are the paper's 16×8×4 blocks (§2.4) over the 256×256×16 grid: 16 along world x,
// 8 along world z (the other long axis) and 4 along world y, the short vertical one.

layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

// `WindPush` in shaders/src/lib.rs.
layout(push_constant, std430) uniform Push {
    uvec4 n;       // nx, ny, nz, number of wind balls
    vec4 h;        // cell size hx, hy, hz; w: time step dt
    vec4 inv_h;    // 1 / h
    vec4 inv_h2;   // 1 / h²
    vec4 origin;   // minimum corner of the domain
    vec4 border;   // border wind; w: vorticity confinement strength ε
    uvec4 sides;   // x: inflow sides (bit s for side s = x−, x+, y−, y+, z−, z+), y: open sides,
                   // z: first face slab of the forces dispatch
} pc;

layout(set = 0, binding = 0, std430) buffer VelIn { float vel_in[]; };
layout(set = 0, binding = 1, std430) buffer VelOut { float vel_out[]; };
layout(set = 0, binding = 2, std430) buffer Centre { vec4 centre[]; };
layout(set = 0, binding = 3, std430) buffer Act { float act[]; };
layout(set = 0, binding = 4, std430) buffer InvDiag { float inv_diag[]; };
layout(set = 0, binding = 5, std430) buffer Div { float div[]; };
layout(set = 0, binding = 6, std430) buffer PIn { float p_in[]; };
layout(set = 0, binding = 7, std430) buffer POut { float p_out[]; };
layout(set = 0, binding = 8, std430) readonly buffer Solid { uint solid[]; };
// Vorticity confinement's (ω, |ω|) per cell (unpadded), see wind_vort_curl.comp.
layout(set = 0, binding = 9, std430) buffer Conf { vec4 conf[]; };

// `GpuWindBall` in shaders/src/lib.rs: one Gaussian force ball as it acts this step (§2.3).
struct Ball {
    vec4 centre_reach2; // xyz: jittered centre, w: (3r)²
    vec4 accel_inv_r2;  // xyz: acceleration at the centre, w: 1 / r²
};

// `WindBallsHeader` in shaders/src/lib.rs, then the balls.
layout(set = 1, binding = 0, std430) readonly buffer Balls {
    ivec4 k_lo; // per component: first face slab any ball reaches
    ivec4 k_hi; // per component: last one (k_lo > k_hi: none)
    Ball balls[];
};

ivec3 cells() { return ivec3(pc.n.xyz); }

// Face-array dimensions of component a.
ivec3 face_dims(int a) {
    ivec3 d = cells();
    d[a] += 1;
    return d;
}

// Offset of component a in the velocity arrays.
uint comp_base(int a) {
    uint nx = pc.n.x, ny = pc.n.y, nz = pc.n.z;
    uint nu = (nx + 1u) * ny * nz;
    uint nv = nx * (ny + 1u) * nz;
    return a == 0 ? 0u : (a == 1 ? nu : nu + nv);
}

uint face_index(int a, ivec3 f) {
    ivec3 d = face_dims(a);
    return comp_base(a) + uint(f.x + d.x * (f.y + d.y * f.z));
}

uint cell_index(ivec3 c) {
    ivec3 n = cells();
    return uint(c.x + n.x * (c.y + n.y * c.z));
}

// Index in a padded cell array (−1 and n are the ghosts).
uint pad_index(ivec3 c) {
    ivec3 n = cells() + 2;
    return uint((c.x + 1) + n.x * ((c.y + 1) + n.y * (c.z + 1)));
}

// Strides of a padded array along x, y, z.
uint pad_stride(int a) {
    uint px = pc.n.x + 2u, py = pc.n.y + 2u;
    return a == 0 ? 1u : (a == 1 ? px : px * py);
}

bool inflow(int side) { return ((pc.sides.x >> uint(side)) & 1u) != 0u; }
bool open_side(int side) { return ((pc.sides.y >> uint(side)) & 1u) != 0u; }
