//! Writes every spec of the given files in Sylva's text format into a folder (seeds for the
//! `sylva_text` fuzz target): `cargo run --example write_sylva_seeds -- OUT FILE...`.

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: write_sylva_seeds OUT FILE..."));
    std::fs::create_dir_all(&out).expect("create the output folder");
    let mut n = 0;
    for file in args {
        match sylva_sim::spec::load::load_file(std::path::Path::new(&file)) {
            Ok(lib) => {
                for spec in &lib.species {
                    n += 1;
                    let text = sylva_sim::spec::text::write(spec);
                    std::fs::write(out.join(format!("seed-{n:03}.sylva")), text).expect("write a seed");
                }
            }
            Err(e) => eprintln!("skipped: {e}"),
        }
    }
    println!("{n} Sylva specs written to {}", out.display());
}
