/** The ten class probabilities as labelled bars (a list, readable without the bars). */
export class Bars {
  readonly #list: HTMLOListElement;
  readonly #note: HTMLParagraphElement;
  readonly #rows: { li: HTMLLIElement; bar: HTMLSpanElement; value: HTMLSpanElement }[] = [];

  constructor(container: HTMLElement) {
    this.#note = document.createElement("p");
    this.#note.className = "probs-note";
    this.#list = document.createElement("ol");
    this.#list.className = "probs";
    this.#list.start = 0;
    for (let d = 0; d < 10; d++) {
      const li = document.createElement("li");
      li.dataset.digit = String(d);
      const label = document.createElement("span");
      label.className = "digit";
      label.textContent = String(d);
      const track = document.createElement("span");
      track.className = "track";
      track.setAttribute("aria-hidden", "true");
      const bar = document.createElement("span");
      bar.className = "bar";
      track.append(bar);
      const value = document.createElement("span");
      value.className = "value";
      li.append(label, track, value);
      this.#list.append(li);
      this.#rows.push({ li, bar, value });
    }
    container.replaceChildren(this.#note, this.#list);
  }

  /** Empty bars and a note. */
  clear(note: string): void {
    this.#note.textContent = note;
    for (const r of this.#rows) {
      r.bar.style.width = "0";
      r.value.textContent = "–";
      r.li.classList.remove("top");
      delete r.li.dataset.p;
    }
  }

  /** Show ten probabilities; the largest is highlighted and named. */
  show(p: ArrayLike<number>): void {
    let best = 0;
    for (let d = 1; d < 10; d++) if (p[d] > p[best]) best = d;
    this.#note.textContent = `The model says ${best} (${(p[best] * 100).toFixed(1)}%).`;
    this.#rows.forEach((r, d) => {
      r.bar.style.width = `${Math.max(0, Math.min(1, p[d])) * 100}%`;
      r.value.textContent = `${(p[d] * 100).toFixed(1)}%`;
      r.li.dataset.p = String(p[d]);
      r.li.classList.toggle("top", d === best);
    });
  }
}
