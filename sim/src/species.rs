//! Species built into Sylva, so a tree can be named without a spec file (the viewer's default
//! forest, `--species` without a file). Each is a Sylva spec file in `sim/species/`.

use crate::spec::load::load_str;
use crate::spec::{SpecError, WeberPennSpec};

/// (name, Sylva spec text) of every built-in species.
const BUILTIN: &[(&str, &str)] = &[
    ("quaking_aspen", include_str!("../species/quaking_aspen.sylva")),
    ("lombardy_poplar", include_str!("../species/lombardy_poplar.sylva")),
    (
        "eastern_cottonwood",
        include_str!("../species/eastern_cottonwood.sylva"),
    ),
    ("black_tupelo", include_str!("../species/black_tupelo.sylva")),
    ("sassafras", include_str!("../species/sassafras.sylva")),
];

/// Names of the built-in species.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(n, _)| *n)
}

/// The built-in species `name`.
pub fn builtin(name: &str) -> Result<WeberPennSpec, SpecError> {
    let Some((file, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
        return Err(SpecError::new(
            "built-in species",
            "species",
            format!(
                "no built-in species '{name}'; allowed: {}",
                names().collect::<Vec<_>>().join(", ")
            ),
        ));
    };
    let library = load_str(text, &format!("{file}.sylva"))?;
    Ok(library.pick(Some(name))?.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weberpenn::{generate, GenOptions};

    #[test]
    fn every_builtin_species_loads_and_grows() {
        for name in names() {
            let spec = builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.species, name);
            let g = generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap();
            assert!(
                g.skeleton.segments.len() > 500,
                "{name}: {} segments",
                g.skeleton.segments.len()
            );
            assert!(!g.skeleton.leaves.is_empty(), "{name} has no leaves");
        }
    }

    #[test]
    fn unknown_species_lists_the_choices() {
        let e = builtin("baobab").unwrap_err().to_string();
        assert!(e.contains("baobab") && e.contains("quaking_aspen"), "{e}");
    }
}
