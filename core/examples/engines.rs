//! Prints the CRC engines this CPU runs, one name a line, widest last:
//! `just test` runs the core's whole suite once on each
//! (`ZARIS_CRC_ENGINE=<name> cargo test -p zaris-core`).

fn main() {
    for engine in zaris_core::CrcEngine::ALL {
        if engine.is_supported() {
            println!("{}", engine.name());
        }
    }
}
