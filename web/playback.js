// A cursor through a recorded run, played on animation frames, paused,
// stepped from stop to stop and driven by keys: what the churn player
// (player.js) and the seed replay (replay.js) share. A subclass gives
// `duration()`, `seek(ms)`, `remember()` and `stops`, and may give
// `speed()`.
import { $ } from './dom.js';

export class Playback {
  /** `toggle`: the id of the play/pause button. */
  constructor(toggle) {
    this.toggleId = toggle;
    this.t = 0;
    this.timer = null;
    this.stops = [];
  }

  /** How many times real time the cursor moves. */
  speed() { return 1; }

  play() {
    const end = this.duration();
    if (end === null || this.timer) return;
    if (this.t >= end) this.t = 0;
    let last = performance.now();
    const tick = (now) => {
      this.seek(this.t + (now - last) * this.speed());
      last = now;
      if (this.t >= end) this.pause();
      else this.timer = requestAnimationFrame(tick);
    };
    this.timer = requestAnimationFrame(tick);
    $(this.toggleId).textContent = '❚❚ Pause';
    $(this.toggleId).setAttribute('aria-pressed', 'true');
  }

  pause() {
    if (this.timer) cancelAnimationFrame(this.timer);
    this.timer = null;
    $(this.toggleId).textContent = '▶ Play';
    $(this.toggleId).setAttribute('aria-pressed', 'false');
    this.remember();
  }

  toggle() {
    if (this.timer) this.pause(); else this.play();
  }

  /** The cursor line (`this.cursor`, placed by `this.x`) at `this.t`,
   * and the time slider and clock with it. */
  showTime(slider, clock) {
    const at = this.x(this.t);
    this.cursor.setAttribute('x1', at);
    this.cursor.setAttribute('x2', at);
    $(slider).value = this.t;
    $(clock).textContent = `${(this.t / 1000).toFixed(3)} s`;
  }

  /** Pauses and moves to the next stop (or, `back`, the previous one). */
  stepTo(back) {
    this.pause();
    const next = back ? [...this.stops].reverse().find((s) => s < this.t) : this.stops.find((s) => s > this.t);
    this.seek(next ?? (back ? 0 : this.duration()));
  }

  /** Space plays and pauses, the arrows step, Home and End jump. */
  key(e) {
    const keys = {
      ' ': () => this.toggle(), ArrowRight: () => this.step(), ArrowLeft: () => this.step(true),
      Home: () => { this.pause(); this.seek(0); }, End: () => { this.pause(); this.seek(Infinity); },
    };
    if (keys[e.key]) {
      e.preventDefault();
      keys[e.key]();
    }
  }
}
