//! Compiles every GLSL stage in `glsl/` (`*.vert`, `*.frag`, `*.comp`) to SPIR-V with shaderc.
//! `#include "x.glsl"` resolves inside `glsl/`. A compile error stops the build with the
//! compiler's message, which names the file and line.

use std::path::{Path, PathBuf};

fn main() {
    // The manifest folder at run time, not `env!` at compile time: clones sharing one target
    // folder share this script's binary, so a path baked in would name another clone.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let src = Path::new(&manifest).join("glsl");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed={}", src.display());
    let compiler = shaderc::Compiler::new().expect("shaderc compiler");
    let mut entries: Vec<_> = std::fs::read_dir(&src)
        .expect("glsl folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    let mut failures = Vec::new();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let kind = match path.extension().and_then(|e| e.to_str()) {
            Some("vert") => shaderc::ShaderKind::Vertex,
            Some("frag") => shaderc::ShaderKind::Fragment,
            Some("comp") => shaderc::ShaderKind::Compute,
            _ => continue,
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut options = shaderc::CompileOptions::new().expect("shaderc options");
        options.set_target_env(shaderc::TargetEnv::Vulkan, shaderc::EnvVersion::Vulkan1_3 as u32);
        options.set_optimization_level(shaderc::OptimizationLevel::Performance);
        options.set_warnings_as_errors();
        let dir = src.clone();
        options.set_include_callback(move |requested, _, _, _| {
            let p = dir.join(requested);
            std::fs::read_to_string(&p)
                .map(|content| shaderc::ResolvedInclude {
                    resolved_name: p.display().to_string(),
                    content,
                })
                .map_err(|e| format!("cannot include {requested}: {e}"))
        });
        match compiler.compile_into_spirv(&text, kind, &path.display().to_string(), "main", Some(&options)) {
            Ok(spirv) => {
                std::fs::write(out.join(format!("{name}.spv")), spirv.as_binary_u8()).expect("write SPIR-V");
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        // The compiler's messages already read "file:line: error: ...".
        eprintln!("shader compilation failed:\n{}", failures.join("\n"));
        std::process::exit(1);
    }
}
