// The trilinear sample of one component of a MAC-grid velocity field, shared by the GPU wind's
// advection (wind_advect.comp) and the GPU dynamics' wind sampling (oliapuram_common.glsl), so
// both read the grid exactly as the CPU's `trilinear` (sim/src/fluid/advect.rs) does.
//
// The includer defines `FLUID_FIELD` as the float array the components live in, one after the
// other, before including this file.
//
// `base`: where the component starts in `FLUID_FIELD`; `fd`: its face dimensions (at least 2
// along every axis); `c`: the point in the component's own grid coordinates (face (i, j, k)
// at (i, j, k)). The coordinates are clamped into the grid as the CPU's `max(0).min(fd − 1)`,
// which maps NaN to 0 (GLSL's min/max leave NaN undefined, so it is tested for), and the cell
// index is clamped as an integer too: whatever the point, no read leaves the component.

float fluid_trilinear(uint base, ivec3 fd, vec3 c) {
    ivec3 i0;
    vec3 t;
    for (int b = 0; b < 3; b++) {
        float mx = float(fd[b] - 1);
        float x = isnan(c[b]) ? 0.0 : min(max(c[b], 0.0), mx);
        // 0 ≤ x ≤ fd − 1, so truncation is floor.
        int fl = clamp(int(x), 0, fd[b] - 2);
        i0[b] = fl;
        t[b] = x - float(fl);
    }
    uint sy = uint(fd.x);
    uint sz = uint(fd.x * fd.y);
    uint i = base + uint(i0.x + fd.x * (i0.y + fd.y * i0.z));
    // lerp(a, b, t) = a + (b − a) t, as on the CPU; `precise` keeps the compiler from fusing it.
    precise float c00 = FLUID_FIELD[i] + (FLUID_FIELD[i + 1u] - FLUID_FIELD[i]) * t.x;
    precise float c10 = FLUID_FIELD[i + sy] + (FLUID_FIELD[i + sy + 1u] - FLUID_FIELD[i + sy]) * t.x;
    precise float c01 = FLUID_FIELD[i + sz] + (FLUID_FIELD[i + sz + 1u] - FLUID_FIELD[i + sz]) * t.x;
    precise float c11 = FLUID_FIELD[i + sz + sy] + (FLUID_FIELD[i + sz + sy + 1u] - FLUID_FIELD[i + sz + sy]) * t.x;
    precise float c0 = c00 + (c10 - c00) * t.y;
    precise float c1 = c01 + (c11 - c01) * t.y;
    precise float r = c0 + (c1 - c0) * t.z;
    return r;
}
