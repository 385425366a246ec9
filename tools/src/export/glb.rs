//! Binary glTF 2.0 (.glb): a builder that lays out the binary chunk (buffer views 4-byte aligned,
//! one accessor per attribute) and writes the container, and the tree's two primitives with
//! their materials, shared by the still and the animated export.
//!
//! Invariants: every buffer view starts at a multiple of 4 bytes and every element written is a
//! whole number of 4-byte words (positions, normals, texture coordinates, weights and matrices
//! are `f32`, indices `u32`, joints four `u16`), so no view needs a byte stride. The file is
//! written with `output::AtomicFile`: complete under a temporary name, then renamed into place.

use std::io::Write;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use serde_json::{json, Map, Value};

use super::texture::{bark_texture, leaf_texture, BARK_TEXTURE_SIZE, LEAF_TEXTURE_SIZE};
use super::{ExportLook, Mesh, TreeMesh};
use crate::output::AtomicFile;

const GLB_MAGIC: u32 = 0x4654_6C67; // "glTF"
const GLB_VERSION: u32 = 2;
const CHUNK_JSON: u32 = 0x4E4F_534A; // "JSON"
const CHUNK_BIN: u32 = 0x004E_4942; // "BIN\0"
const FLOAT: u32 = 5126;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;
const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
const TRIANGLES: u32 = 4;

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The binary chunk, its buffer views and accessors, as they are added.
#[derive(Default)]
pub(super) struct Glb {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
    /// Embedded images (PNG in a buffer view) and their textures.
    images: Vec<Value>,
    textures: Vec<Value>,
    /// The materials, each made (with its texture) the first time a primitive needs it:
    /// every level of detail shares them.
    materials: Vec<(Part, Value)>,
}

/// The tree's two materials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Bark,
    Leaf,
}

impl Glb {
    /// Appends `bytes` as a buffer view (for vertex attributes or indices when `target` is
    /// given) and returns its index.
    fn view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        self.bin.resize(align4(self.bin.len()), 0);
        let mut view = json!({ "buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len() });
        if let Some(t) = target {
            view["target"] = t.into();
        }
        self.bin.extend_from_slice(bytes);
        self.views.push(view);
        self.views.len() - 1
    }

    /// Adds `data` (`components` floats per element) as an accessor of glTF type `ty`, with its
    /// bounds when `bounds` (glTF requires them on positions and animation inputs).
    pub(super) fn floats(
        &mut self,
        data: &[f32],
        components: usize,
        ty: &str,
        target: Option<u32>,
        bounds: bool,
    ) -> usize {
        let bytes: Vec<u8> = data.iter().flat_map(|f| f.to_le_bytes()).collect();
        let view = self.view(&bytes, target);
        let count = data.len() / components;
        let mut accessor = json!({ "bufferView": view, "componentType": FLOAT, "count": count, "type": ty });
        if bounds && count > 0 {
            let mut lo = vec![f32::INFINITY; components];
            let mut hi = vec![f32::NEG_INFINITY; components];
            for element in data.chunks_exact(components) {
                for (c, &v) in element.iter().enumerate() {
                    lo[c] = lo[c].min(v);
                    hi[c] = hi[c].max(v);
                }
            }
            accessor["min"] = lo.into();
            accessor["max"] = hi.into();
        }
        self.accessors.push(accessor);
        self.accessors.len() - 1
    }

    fn indices(&mut self, data: &[u32]) -> usize {
        let bytes: Vec<u8> = data.iter().flat_map(|i| i.to_le_bytes()).collect();
        let view = self.view(&bytes, Some(ELEMENT_ARRAY_BUFFER));
        self.accessors.push(json!({
            "bufferView": view, "componentType": UNSIGNED_INT, "count": data.len(), "type": "SCALAR"
        }));
        self.accessors.len() - 1
    }

    fn joints(&mut self, data: &[[u16; 4]]) -> usize {
        let bytes: Vec<u8> = data.iter().flatten().flat_map(|j| j.to_le_bytes()).collect();
        let view = self.view(&bytes, Some(ARRAY_BUFFER));
        self.accessors.push(json!({
            "bufferView": view, "componentType": UNSIGNED_SHORT, "count": data.len(), "type": "VEC4"
        }));
        self.accessors.len() - 1
    }

    /// Adds `mesh` as a triangle primitive of `material`: POSITION, NORMAL, TEXCOORD_0 and,
    /// when `joint_of` (the joint of each skeleton segment) is given, JOINTS_0 and WEIGHTS_0
    /// binding every vertex wholly to its segment's joint.
    fn primitive(&mut self, mesh: &Mesh, material: usize, joint_of: Option<&[u16]>) -> Value {
        let flat3 = |v: &[glam::Vec3]| v.iter().flat_map(|p| p.to_array()).collect::<Vec<f32>>();
        let position = self.floats(&flat3(&mesh.positions), 3, "VEC3", Some(ARRAY_BUFFER), true);
        let normal = self.floats(&flat3(&mesh.normals), 3, "VEC3", Some(ARRAY_BUFFER), false);
        let uvs: Vec<f32> = mesh.uvs.iter().flat_map(|t| t.to_array()).collect();
        let uv = self.floats(&uvs, 2, "VEC2", Some(ARRAY_BUFFER), false);
        let mut attributes = json!({ "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv });
        if let Some(joint_of) = joint_of {
            let joints: Vec<[u16; 4]> = mesh
                .segments
                .iter()
                .map(|&s| [joint_of.get(s as usize).copied().unwrap_or(0), 0, 0, 0])
                .collect();
            let weights: Vec<f32> = mesh.segments.iter().flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect();
            attributes["JOINTS_0"] = self.joints(&joints).into();
            attributes["WEIGHTS_0"] = self.floats(&weights, 4, "VEC4", Some(ARRAY_BUFFER), false).into();
        }
        let indices = self.indices(&mesh.indices);
        json!({ "attributes": attributes, "indices": indices, "material": material, "mode": TRIANGLES })
    }

    /// Embeds `png` as an image with a texture, sampled clamped (sampler 0: a leaf card is one
    /// leaf) or repeated (sampler 1: bark tiles), and returns the texture's index.
    fn texture(&mut self, png: &[u8], repeat: bool) -> usize {
        let view = self.view(png, None);
        self.images.push(json!({ "bufferView": view, "mimeType": "image/png" }));
        self.textures
            .push(json!({ "sampler": u32::from(repeat), "source": self.images.len() - 1 }));
        self.textures.len() - 1
    }

    /// The index of `part`'s material in `look`, made with its texture the first time: `bark`
    /// (rough, the tiling bark texture) or `leaf` (the leaf texture, its alpha the blade's
    /// outline cut at 0.5, double-sided).
    fn material(&mut self, part: Part, look: &ExportLook) -> usize {
        if let Some(k) = self.materials.iter().position(|(p, _)| *p == part) {
            return k;
        }
        let material = match part {
            Part::Bark => {
                let texture = self.texture(&bark_texture(look, BARK_TEXTURE_SIZE).to_png(), true);
                json!({
                    "name": "bark",
                    "pbrMetallicRoughness": {
                        "baseColorTexture": { "index": texture },
                        "metallicFactor": 0.0,
                        "roughnessFactor": 0.9
                    }
                })
            }
            Part::Leaf => {
                let texture = self.texture(&leaf_texture(look, LEAF_TEXTURE_SIZE).to_png(), false);
                json!({
                    "name": "leaf",
                    "pbrMetallicRoughness": {
                        "baseColorTexture": { "index": texture },
                        "metallicFactor": 0.0,
                        "roughnessFactor": 0.7
                    },
                    "alphaMode": "MASK",
                    "alphaCutoff": 0.5,
                    "doubleSided": true
                })
            }
        };
        self.materials.push((part, material));
        self.materials.len() - 1
    }

    /// Adds the tree's bark and leaf primitives (those with triangles), with their materials
    /// ([`material`](Self::material)), and returns the mesh object. Fails for a mesh with no
    /// triangles.
    pub(super) fn tree(&mut self, mesh: &TreeMesh, joint_of: Option<&[u16]>, path: &Path) -> Result<Value> {
        mesh.bark.check("bark")?;
        mesh.leaves.check("leaf")?;
        let mut primitives = Vec::new();
        for (part, m) in [(Part::Bark, &mesh.bark), (Part::Leaf, &mesh.leaves)] {
            if !m.is_empty() {
                let material = self.material(part, &mesh.look);
                primitives.push(self.primitive(m, material, joint_of));
            }
        }
        ensure!(
            !primitives.is_empty(),
            "cannot write {}: the mesh has no triangles",
            path.display()
        );
        Ok(json!({ "name": "tree", "primitives": primitives }))
    }

    /// Completes `document` (its accessors, buffer views, buffer, materials and textures added)
    /// and writes the .glb
    /// to `path`; returns the bytes written. Fails, writing nothing, when the file would exceed
    /// the 4 GiB a .glb can hold.
    pub(super) fn write(mut self, mut document: Map<String, Value>, path: &Path) -> Result<u64> {
        self.bin.resize(align4(self.bin.len()), 0);
        document.insert("accessors".into(), Value::Array(std::mem::take(&mut self.accessors)));
        document.insert("bufferViews".into(), Value::Array(std::mem::take(&mut self.views)));
        document.insert("buffers".into(), json!([{ "byteLength": self.bin.len() }]));
        let materials: Vec<Value> = std::mem::take(&mut self.materials)
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        document.insert("materials".into(), Value::Array(materials));
        if !self.textures.is_empty() {
            document.insert("images".into(), Value::Array(std::mem::take(&mut self.images)));
            document.insert("textures".into(), Value::Array(std::mem::take(&mut self.textures)));
            document.insert(
                "samplers".into(),
                json!([
                    { "magFilter": 9729, "minFilter": 9987, "wrapS": 33071, "wrapT": 33071 },
                    { "magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497 }
                ]),
            );
        }
        let json_text = serde_json::to_vec(&Value::Object(document)).context("encoding the glTF JSON failed")?;
        let json_len = align4(json_text.len()) as u64;
        let bin_len = self.bin.len() as u64;
        let total = 12 + 8 + json_len + 8 + bin_len;
        ensure!(
            total <= u32::MAX as u64,
            "cannot write {}: the tree needs {total} bytes but a .glb holds at most {} (use fewer sides, no leaves or .obj)",
            path.display(),
            u32::MAX
        );
        let mut file = AtomicFile::create(path)?;
        write_body(file.writer(), &json_text, json_len, &self.bin, total)
            .with_context(|| format!("writing {} failed", path.display()))?;
        let bytes = file.finish()?;
        ensure!(
            bytes == total,
            "writing {} failed: wrote {bytes} bytes instead of {total}",
            path.display()
        );
        file.persist()?;
        Ok(bytes)
    }
}

fn write_body(w: &mut impl Write, json_text: &[u8], json_len: u64, bin: &[u8], total: u64) -> std::io::Result<()> {
    let u32le = |v: u64| (v as u32).to_le_bytes();
    w.write_all(&GLB_MAGIC.to_le_bytes())?;
    w.write_all(&GLB_VERSION.to_le_bytes())?;
    w.write_all(&u32le(total))?;

    w.write_all(&u32le(json_len))?;
    w.write_all(&CHUNK_JSON.to_le_bytes())?;
    w.write_all(json_text)?;
    for _ in json_text.len() as u64..json_len {
        w.write_all(b" ")?;
    }

    w.write_all(&u32le(bin.len() as u64))?;
    w.write_all(&CHUNK_BIN.to_le_bytes())?;
    w.write_all(bin)
}

/// The document's fixed part: the asset, and one scene of `nodes`.
pub(super) fn document(nodes: &[usize]) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert("asset".into(), json!({ "version": "2.0", "generator": "Sylva" }));
    d.insert("scene".into(), 0.into());
    d.insert("scenes".into(), json!([{ "name": "tree", "nodes": nodes }]));
    d
}
