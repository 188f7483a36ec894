//! One speed bar and the verdict of a run on it: met, missed, or out of
//! reach (missed where the engine's physical floor is above what the bar
//! asks: the verdict says so, with the floor's figure).

/// One bar and how the run did against it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// What is measured, in words.
    pub what: String,
    /// What it must reach.
    pub needed: String,
    /// What the run measured (`None`: not measured, which fails the bar).
    pub measured: Option<String>,
    /// Whether it holds.
    pub met: bool,
    /// Where it does not hold and cannot: the floor, in words (what the
    /// bar would need against what the hardware alone takes).
    pub floor: Option<String>,
}

impl Bar {
    /// The verdict in words: `met`, `at the floor`, or `NOT met`.
    #[must_use]
    pub fn verdict(&self) -> &'static str {
        match (self.met, &self.floor) {
            (true, _) => "met",
            (false, Some(_)) => "at the floor",
            (false, None) => "NOT met",
        }
    }

    /// Missed with no floor to show for it: a real miss.
    #[must_use]
    pub fn missed(&self) -> bool {
        !self.met && self.floor.is_none()
    }
}
