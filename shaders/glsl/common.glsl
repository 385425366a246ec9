// Shared by every Sylva shader: the per-frame uniforms (std140, matches
// sylva_shaders::FrameUniforms) and small helpers.

layout(set = 0, binding = 0, std140) uniform Frame {
    mat4 view_proj;
    mat4 light_view_proj;
    vec4 camera_pos;     // xyz: eye
    vec4 light_dir;      // xyz: towards the sun (unit), w: sun intensity
    vec4 sun_color;
    vec4 sky_zenith;
    vec4 sky_horizon;
    vec4 leaves;         // x: 1 when leaf edges go to alpha-to-coverage (multisampled)
    vec4 ground_color;
    vec4 viewport;       // width, height, 1/width, 1/height
    vec4 params;         // x: time, y: shadow bias, z: ground fade distance, w: shadow texel
    mat4 inv_view_proj;
    vec4 palette[64];    // per species look k: [2k] leaf rgb, w its shape id; [2k + 1] bark rgb
} frame;

// A segment instance's base radius carries its palette entry in its 5 low mantissa bits
// (sylva_shaders::PALETTE_BITS): the entry, and the radius without them.
uint segment_palette(float r) {
    return floatBitsToUint(r) & 31u;
}
float segment_radius(float r) {
    return uintBitsToFloat(floatBitsToUint(r) & ~31u);
}

layout(set = 0, binding = 1) uniform sampler2DShadow shadow_map;

// A vertex of the segment mesh (`mesh::cylinder`) in the segment's frame: the sides scaled by
// the radius at their end and the length; the domes (y below 0 or above 1) hemispheres of the
// end's radius beyond it.
vec3 segment_local(vec3 p, float r_base, float r_tip, float len) {
    float t = clamp(p.y, 0.0, 1.0);
    float r = p.y < 0.0 ? r_base : (p.y > 1.0 ? r_tip : mix(r_base, r_tip, t));
    float y = t * len + min(p.y, 0.0) * r_base + max(p.y - 1.0, 0.0) * r_tip;
    return vec3(p.x * r, y, p.z * r);
}

// Bark's furrows at a point of the stem's surface: `uv.x` the turn round the stem (0..1), `uv.y`
// the distance along it in circumferences. Eight ridges a turn, their phase wavering with the
// height (periodic in uv.y, so a texture of it tiles); 0 deep in a furrow, 1 on a ridge. The
// exported bark texture draws the same function (tools/src/export/texture.rs).
float bark_ridges(vec2 uv) {
    const float TAU = 6.28318531;
    float phase = 8.0 * uv.x + 0.35 * sin(TAU * uv.y) + 0.15 * sin(3.0 * TAU * uv.y + 1.0);
    return smoothstep(0.15, 0.6, abs(sin(3.14159265 * phase)));
}

// Rotates v by the unit quaternion q (xyzw).
vec3 rotate(vec4 q, vec3 v) {
    vec3 t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

// Fraction of sunlight reaching a world position: one depth-compare lookup, which the
// sampler's linear filter turns into 2x2 percentage-closer filtering.
float sunlight(vec3 world, vec3 normal) {
    vec4 l = frame.light_view_proj * vec4(world + normal * frame.params.w * 2.0, 1.0);
    vec3 uvz = l.xyz / l.w;
    vec2 uv = uvz.xy * 0.5 + 0.5;
    if (any(lessThan(uv, vec2(0.0))) || any(greaterThan(uv, vec2(1.0))) || uvz.z > 1.0) {
        return 1.0;
    }
    return texture(shadow_map, vec3(uv, uvz.z - frame.params.y));
}

// Sky colour in a direction: horizon to zenith, and a warm glow around the sun. Cheap
// polynomials rather than pow(): this runs for every sky and ground pixel.
vec3 sky(vec3 dir) {
    float up = clamp(dir.y, 0.0, 1.0);
    vec3 c = mix(frame.sky_horizon.rgb, frame.sky_zenith.rgb, sqrt(up));
    float sun = max(dot(dir, frame.light_dir.xyz), 0.0);
    float s2 = sun * sun;
    float s8 = s2 * s2;
    s8 *= s8;
    // The disc (about 1.5 degrees across) and a wide glow.
    float disc = smoothstep(0.9996, 0.9999, sun);
    c += frame.sun_color.rgb * (disc * 4.0 + s8 * 0.15);
    return c;
}

// Lambert lighting with sun, shadow and a sky ambient term.
vec3 shade(vec3 albedo, vec3 n, vec3 world, float wrap) {
    float ndl = dot(n, frame.light_dir.xyz);
    float diffuse = clamp((ndl + wrap) / (1.0 + wrap), 0.0, 1.0);
    float lit = diffuse > 0.0 ? sunlight(world, n) : 0.0;
    vec3 ambient = mix(frame.ground_color.rgb * 0.35, frame.sky_zenith.rgb, n.y * 0.5 + 0.5) * 0.45;
    return albedo * (ambient + frame.sun_color.rgb * frame.light_dir.w * diffuse * lit);
}
