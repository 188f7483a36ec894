//! The layout tests' reading of a crate's source (`core/tests/layout.rs`
//! and `client/tests/layout.rs` include this file): every file as a module
//! id (`request/send`, `lib`), its code without comments or unit tests,
//! who imports whom, the `impl` blocks outside the file that defines their
//! type, and the files a code map does not name.
//!
//! An import is any path through the crate: `crate::`, `super::`,
//! `self::`, or a child module declared in the file (`mod retry;` then
//! `retry::Retrying`), nested use trees (`use crate::{a::B, c::{D, E}}`)
//! included. A path through a re-export (`crate::Error`, or
//! `crate::request::Retrying` where `request/mod.rs` has
//! `pub(crate) use retry::Retrying;`) counts as an import of the file that
//! defines the name.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A crate's source, read for its layout.
pub struct Layout {
    /// Module id (`lib`, `pool`, `request`, `request/send`) to its code.
    pub files: BTreeMap<String, String>,
}

/// Each module's re-exported names, each to the absolute path it stands
/// for.
type Reexports = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// A path as written, and what it is re-exported as.
struct UsePath {
    segments: Vec<String>,
    alias: Option<String>,
}

impl Layout {
    /// Every `.rs` file under `src`, its comments and its `mod tests`
    /// (when last in the file) left out.
    pub fn read(src: &Path) -> Self {
        fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
            let mut entries: Vec<_> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    walk(&path, root, out);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let rel = path.strip_prefix(root).unwrap().with_extension("");
                let mut id = rel.to_string_lossy().replace('\\', "/");
                if id.ends_with("/mod") {
                    id.truncate(id.len() - 4);
                }
                // A module's unit tests in a file of their own.
                if id.ends_with("/tests") {
                    continue;
                }
                let text = fs::read_to_string(&path).unwrap();
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => &text[..at],
                    None => &text,
                };
                out.insert(id, strip_comments(code));
            }
        }
        let mut files = BTreeMap::new();
        walk(src, src, &mut files);
        Self { files }
    }

    /// The file a module id names: `lib.rs`, `pool.rs`, `request/mod.rs`.
    pub fn file_of(&self, id: &str) -> String {
        if id == "lib" {
            return "lib.rs".to_owned();
        }
        let nested = self.files.keys().any(|k| k.starts_with(&format!("{id}/")));
        if nested {
            format!("{id}/mod.rs")
        } else {
            format!("{id}.rs")
        }
    }

    /// Who imports whom: module id to the ids it imports (itself and the
    /// crate root left out).
    pub fn imports(&self) -> BTreeMap<String, BTreeSet<String>> {
        // Each file's re-exports, read once.
        let reexports: Reexports = self
            .files
            .keys()
            .map(|module| (module.clone(), self.reexports(module)))
            .collect();
        let mut graph = BTreeMap::new();
        for module in self.files.keys() {
            let targets: &mut BTreeSet<String> = graph.entry(module.clone()).or_default();
            for path in self.paths(module) {
                if let Some(target) = self.resolve(&reexports, &path, 0) {
                    if target != *module && target != "lib" {
                        targets.insert(target);
                    }
                }
            }
        }
        graph
    }

    /// Every module `from` reaches in `graph`.
    pub fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(next) = todo.pop() {
            for target in graph.get(&next).into_iter().flatten() {
                if seen.insert(target.clone()) {
                    todo.push(target.clone());
                }
            }
        }
        seen
    }

    /// The `impl` blocks for a type of this crate outside the file that
    /// defines it: `(type, defined in, implemented in)`.
    pub fn foreign_impls(&self) -> Vec<(String, String, String)> {
        let mut defined: BTreeMap<String, String> = BTreeMap::new();
        for (module, code) in &self.files {
            for name in definitions(code) {
                defined.entry(name).or_insert_with(|| module.clone());
            }
        }
        let mut found = Vec::new();
        for (module, code) in &self.files {
            let own = definitions(code);
            for ty in impl_types(code) {
                if own.contains(&ty) {
                    continue;
                }
                if let Some(home) = defined.get(&ty) {
                    if home != module {
                        found.push((ty, home.clone(), module.clone()));
                    }
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// Calls between the files that implement `ty` (its home and the
    /// files of its spread `impl` blocks): each file to the others whose
    /// methods of `ty` it calls. A file that fills in another's type and
    /// is called from there is a circle the imports do not show; these
    /// edges show it. (The core spreads no type, so only the client's
    /// test asks.)
    #[allow(dead_code)]
    pub fn method_calls(&self, ty: &str) -> BTreeMap<String, BTreeSet<String>> {
        let defined: BTreeMap<&String, BTreeSet<String>> = self
            .files
            .iter()
            .map(|(module, code)| (module, methods_of(code, ty)))
            .filter(|(_, methods)| !methods.is_empty())
            .collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (caller, code) in &self.files {
            let implements = impl_types(code).iter().any(|t| t == ty);
            let joined = chains_joined(code);
            for (definer, methods) in &defined {
                if *definer != caller && methods.iter().any(|m| calls(&joined, ty, m, implements)) {
                    graph
                        .entry(caller.clone())
                        .or_default()
                        .insert((*definer).clone());
                }
            }
        }
        graph
    }

    /// The files `section` (a crate's section of a code map, see
    /// [`section`]) does not name: each by its whole path under `src/`
    /// (`request/send.rs`; `retry.rs` alone does not name it), a folder's
    /// `mod.rs` by the folder (`request/`).
    pub fn unnamed_in(&self, section: &str) -> Vec<String> {
        self.files
            .keys()
            .map(|id| self.file_of(id))
            .filter(|file| !names_file(section, file))
            .collect()
    }

    /// Every path through the crate in `module`'s code, as absolute
    /// module segments (`["request", "retry", "Retrying"]`).
    fn paths(&self, module: &str) -> Vec<Vec<String>> {
        let code = &self.files[module];
        let own = own_path(module);
        let children = children(code);
        let mut found = Vec::new();
        let bytes = code.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let word_start = at == 0 || !is_ident(bytes[at - 1]) && bytes[at - 1] != b':';
            if word_start && is_ident(bytes[at]) {
                let end = at
                    + code[at..]
                        .find(|c: char| !is_ident_char(c))
                        .unwrap_or(code.len() - at);
                let word = &code[at..end];
                let starts_path = code[end..].starts_with("::")
                    && (matches!(word, "crate" | "super" | "self") || children.contains(word));
                if starts_path {
                    let mut parsed = Vec::new();
                    let used = use_tree(&code[at..], &mut Vec::new(), &mut parsed);
                    for path in parsed {
                        if let Some(abs) = absolute(&own, &path.segments, &children) {
                            found.push(abs);
                        }
                    }
                    at += used.max(1);
                    continue;
                }
                at = end;
                continue;
            }
            at += 1;
        }
        found
    }

    /// The names `module` re-exports (`pub use`, `pub(crate) use`), each
    /// to the absolute path it stands for.
    fn reexports(&self, module: &str) -> BTreeMap<String, Vec<String>> {
        let code = &self.files[module];
        let own = own_path(module);
        let children = children(code);
        let mut out = BTreeMap::new();
        for marker in ["pub use ", "pub(crate) use ", "pub(super) use "] {
            for (at, _) in code.match_indices(marker) {
                let mut parsed = Vec::new();
                use_tree(&code[at + marker.len()..], &mut Vec::new(), &mut parsed);
                for path in parsed {
                    let Some(name) = path.alias.clone().or_else(|| path.segments.last().cloned())
                    else {
                        continue;
                    };
                    if let Some(abs) = absolute(&own, &path.segments, &children) {
                        out.insert(name, abs);
                    }
                }
            }
        }
        out
    }

    /// The file `segments` lead to: the longest prefix that is a file,
    /// then through its re-exports; a name at the root through the crate
    /// root's.
    fn resolve(&self, reexports: &Reexports, segments: &[String], depth: usize) -> Option<String> {
        if depth > 8 || segments.is_empty() {
            return None;
        }
        for n in (1..=segments.len()).rev() {
            let id = segments[..n].join("/");
            if self.files.contains_key(&id) {
                if let Some(next) = segments.get(n) {
                    if let Some(target) = reexports.get(&id).and_then(|r| r.get(next)) {
                        return self.resolve(reexports, target, depth + 1);
                    }
                }
                return Some(id);
            }
        }
        let target = reexports.get("lib")?.get(&segments[0])?;
        self.resolve(reexports, target, depth + 1)
    }
}

/// `module`'s own path: `request/send` is `["request", "send"]`; the root
/// is empty.
fn own_path(module: &str) -> Vec<String> {
    if module == "lib" {
        return Vec::new();
    }
    module.split('/').map(str::to_owned).collect()
}

/// The child modules `code` declares (`mod retry;`, `pub(crate) mod tag;`).
fn children(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim();
        let rest = line
            .strip_prefix("mod ")
            .or_else(|| line.strip_prefix("pub mod "))
            .or_else(|| line.strip_prefix("pub(crate) mod "))
            .or_else(|| line.strip_prefix("pub(super) mod "));
        if let Some(name) = rest.and_then(|r| r.strip_suffix(';')) {
            out.insert(name.trim().to_owned());
        }
    }
    out
}

/// A written path made absolute from `own` (the module it is written in):
/// `crate::` from the root, `super::` from the parent, `self::` and a
/// child's name from `own`. `None` for a path out of the crate.
fn absolute(
    own: &[String],
    segments: &[String],
    children: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let mut out: Vec<String> = match segments.first()?.as_str() {
        "crate" => Vec::new(),
        "self" | "super" => own.to_vec(),
        child if children.contains(child) => own.to_vec(),
        _ => return None,
    };
    for (i, segment) in segments.iter().enumerate() {
        match segment.as_str() {
            "crate" if i == 0 => {}
            "self" => {}
            "super" => {
                out.pop()?;
            }
            _ => out.push(segment.clone()),
        }
    }
    Some(out)
}

/// Reads a use tree (`a::b::{c, d::{e as f}}`) from the start of `rest`,
/// each complete path into `out` with `prefix` before it; how many bytes
/// it read.
fn use_tree(rest: &str, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) -> usize {
    let bytes = rest.as_bytes();
    let skip = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    let depth = prefix.len();
    let mut at = skip(0);
    loop {
        if bytes.get(at) == Some(&b'{') {
            at += 1;
            loop {
                at = skip(at);
                if bytes.get(at) == Some(&b'}') {
                    prefix.truncate(depth);
                    return at + 1;
                }
                at += use_tree(&rest[at..], prefix, out);
                prefix.truncate(depth);
                at = skip(at);
                match bytes.get(at) {
                    Some(b',') => at += 1,
                    Some(b'}') => return at + 1,
                    _ => return at,
                }
            }
        }
        let start = at;
        while at < bytes.len() && is_ident(bytes[at]) {
            at += 1;
        }
        if start == at {
            prefix.truncate(depth);
            return at;
        }
        prefix.push(rest[start..at].to_owned());
        if rest[at..].starts_with("::") {
            at += 2;
            continue;
        }
        let mut alias = None;
        let after = skip(at);
        if let Some(tail) = rest[after..].strip_prefix("as ") {
            let name_at = after + 3 + (tail.len() - tail.trim_start().len());
            let end = rest[name_at..]
                .find(|c: char| !is_ident_char(c))
                .map_or(rest.len(), |e| name_at + e);
            alias = Some(rest[name_at..end].to_owned());
            at = end;
        }
        out.push(UsePath {
            segments: prefix.clone(),
            alias,
        });
        prefix.truncate(depth);
        return at;
    }
}

/// The methods of `ty` that `code` defines: each `fn` in its own `impl
/// ty` blocks (not a trait's `impl Trait for ty`).
fn methods_of(code: &str, ty: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("impl") {
        let before = rest[..at].chars().next_back();
        let head_end = rest[at..].find('{').map_or(rest.len(), |e| at + e);
        let head = &rest[at..head_end];
        let own = before.is_none_or(|c| !is_ident_char(c))
            && !head.contains(" for ")
            && impl_types(head).first().is_some_and(|t| t == ty);
        if !own || head_end == rest.len() {
            rest = &rest[at + 4..];
            continue;
        }
        // The block, braces balanced.
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[head_end..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = head_end + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let block = &rest[head_end..end];
        let mut words = block
            .split(|c: char| !is_ident_char(c))
            .filter(|w| !w.is_empty());
        while let Some(word) = words.next() {
            if word == "fn" {
                if let Some(name) = words.next() {
                    out.insert(name.to_owned());
                }
            }
        }
        rest = &rest[end..];
    }
    out
}

/// `code` with its method chains joined: no white space before a `.`
/// (`self\n    .name(` reads `self.name(`).
fn chains_joined(code: &str) -> String {
    let mut joined = String::with_capacity(code.len());
    let mut pending = String::new();
    for c in code.chars() {
        if c.is_whitespace() {
            pending.push(c);
            continue;
        }
        if c != '.' {
            joined.push_str(&pending);
        }
        pending.clear();
        joined.push(c);
    }
    joined
}

/// Whether `joined` (code through [`chains_joined`]) calls method `name`
/// of `ty`: `Ty::name(`, or on a receiver named as the type in lower case
/// (`inner.name(`, `self.inner.name(`); where the code implements `ty`
/// (`implements`), also `self.name(` and `Self::name(`.
fn calls(joined: &str, ty: &str, name: &str, implements: bool) -> bool {
    let lower = ty.to_lowercase();
    let mut receivers = vec![format!("{ty}::{name}("), format!("{lower}.{name}(")];
    if implements {
        receivers.extend([format!("self.{name}("), format!("Self::{name}(")]);
    }
    receivers.iter().any(|call| {
        joined.match_indices(call.as_str()).any(|(at, _)| {
            joined[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !is_ident_char(c))
        })
    })
}

/// The types `code` defines (`struct`, `enum`, `union`, `trait`, `type`).
fn definitions(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let mut line = line.trim_start();
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            line = line.strip_prefix(vis).unwrap_or(line);
        }
        for kind in ["struct ", "enum ", "union ", "trait ", "type "] {
            if let Some(rest) = line.strip_prefix(kind) {
                let name: String = rest.chars().take_while(|&c| is_ident_char(c)).collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The types of the `impl` blocks in `code` (`impl<T> Foo<T>`, `impl
/// fmt::Display for crate::Bar` give `Foo` and `Bar`).
fn impl_types(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        let Some(mut rest) = line.strip_prefix("impl") else {
            continue;
        };
        if rest.starts_with('<') {
            // Skip the generics, brackets balanced.
            let mut depth = 0;
            let mut end = 0;
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &rest[end..];
        } else if !rest.starts_with(' ') {
            continue;
        }
        let head = rest
            .split('{')
            .next()
            .unwrap_or("")
            .split(" where ")
            .next()
            .unwrap_or("");
        let ty = head.rsplit(" for ").next().unwrap_or(head).trim();
        let ty = ty.split('<').next().unwrap_or(ty).trim_start_matches('&');
        let name = ty.rsplit("::").next().unwrap_or(ty).trim();
        if !name.is_empty() && name.chars().all(is_ident_char) {
            out.push(name.to_owned());
        }
    }
    out
}

/// `code` without `//` and `/* */` comments (doc comments included).
fn strip_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = &rest[l..];
                rest = rest.find('\n').map_or("", |nl| &rest[nl..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |end| &rest[b + end + 2..]);
            }
            (None, None) => {
                out.push_str(rest);
                return out;
            }
            _ => unreachable!(),
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The section of the code map `map` whose heading names the folder `dir`
/// (`### \`core/\``), up to the next heading of its level or above.
pub fn section<'a>(map: &'a str, dir: &str) -> Option<&'a str> {
    let heading = format!("\n### `{dir}`");
    let start = map.find(&heading)? + 1;
    let rest = &map[start..];
    let end = rest[1..]
        .find("\n## ")
        .into_iter()
        .chain(rest[1..].find("\n### "))
        .min()
        .map_or(rest.len(), |at| at + 1);
    Some(&rest[..end])
}

/// Whether `text` names `file` (a path under a crate's `src/`, or a
/// folder's `mod.rs` by the folder, `request/`), as a whole path: not the
/// tail of a longer one (`retry.rs` in `request/retry.rs`) nor a part of
/// a longer name.
pub fn names_file(text: &str, file: &str) -> bool {
    let (path, folder) = match file.strip_suffix("/mod.rs") {
        Some(dir) => (format!("{dir}/"), true),
        None => (file.to_owned(), false),
    };
    let in_path = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.');
    // The path ends here: a full stop ends a sentence, not a name.
    let ends = |rest: &str| {
        let mut chars = rest.chars();
        match chars.next() {
            None => true,
            Some('.') => !chars.next().is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => !in_path(c),
        }
    };
    text.match_indices(path.as_str()).any(|(at, _)| {
        let starts = text[..at].chars().next_back().is_none_or(|c| !in_path(c));
        starts && (folder || ends(&text[at + path.len()..]))
    })
}
