// The analysis board's moves as a tree, as on Lichess: the first line played is the
// main line; playing another move somewhere keeps both (a variation). The list shows
// numbered moves ("1. 4 4  2. 5 3"), variations in brackets, every move clickable.

class Node {
  constructor(move, parent) {
    this.move = move; // 0-based move index; null at the root
    this.parent = parent;
    this.children = []; // children[0] continues the main line
    this.ply = parent ? parent.ply + 1 : 0;
  }

  /** The moves from the root to this node. */
  path() {
    const moves = [];
    for (let n = this; n.parent; n = n.parent) moves.push(n.move);
    return moves.reverse();
  }
}

export class MoveTree {
  constructor() {
    this.root = new Node(null, null);
    this.current = this.root;
  }

  /** Follow `moves` from the root, adding what is missing; the end becomes current. */
  goToLine(moves) {
    let node = this.root;
    for (const move of moves) node = this.child(node, move);
    this.current = node;
    return node;
  }

  /** The child of `node` by `move`, made if new (a new variation when node has children). */
  child(node, move) {
    let next = node.children.find((c) => c.move === move);
    if (!next) {
      next = new Node(move, node);
      node.children.push(next);
    }
    return next;
  }

  play(move) {
    this.current = this.child(this.current, move);
    return this.current;
  }

  back() {
    if (this.current.parent) this.current = this.current.parent;
    return this.current;
  }

  /** Forward along the line last taken from here (the main line by default). */
  forward() {
    const node = this.current;
    const next = node.lastChild && node.children.includes(node.lastChild) ? node.lastChild : node.children[0];
    if (next) this.current = next;
    return next || null;
  }

  /** Remember, all the way up, which line the current node is on (so "forward" retraces it). */
  remember() {
    for (let n = this.current; n.parent; n = n.parent) n.parent.lastChild = n;
  }

  /** The main line from the root: its moves. */
  mainLine() {
    const moves = [];
    for (let n = this.root.children[0]; n; n = n.children[0]) moves.push(n.move);
    return moves;
  }

  /**
   * Draw the tree into `container` as numbered, clickable moves.
   * name(move) gives a move's text; onPick(node) is called on a click;
   * annotate(node) may give {glyph, title, kind} for a reviewed move.
   */
  render(container, { name, onPick, annotate = () => null, sides }) {
    container.replaceChildren();
    const line = document.createElement("div");
    line.className = "tree-line";
    const add = (parentEl, first, forceNumber) => {
      // `first` is a node; print it and its main continuation, variations in brackets.
      let node = first;
      let needNumber = forceNumber;
      while (node) {
        const white = node.ply % 2 === 1; // the side that moves first plays odd plies
        if (white || needNumber) {
          const number = document.createElement("span");
          number.className = "move-no";
          number.textContent = `${Math.ceil(node.ply / 2)}.${white ? "" : "…"}`;
          parentEl.append(number, " ");
        }
        needNumber = false;
        const button = document.createElement("button");
        button.type = "button";
        button.className = `tree-move p${(node.ply - 1) % 2}`;
        if (node === this.current) {
          button.classList.add("current");
          button.setAttribute("aria-current", "step");
        }
        button.dataset.ply = node.ply;
        button.dataset.path = node.path().map((m) => m + 1).join("");
        const note = annotate(node);
        button.textContent = name(node.move);
        let label = `Move ${node.ply}, ${sides[(node.ply - 1) % 2]} ${name(node.move)}`;
        if (note) {
          const glyph = document.createElement("span");
          glyph.className = `glyph ${note.kind}`;
          glyph.textContent = note.glyph;
          button.append(glyph);
          button.classList.add(note.kind);
          button.title = note.title;
          label += `: ${note.title}`;
        }
        button.setAttribute("aria-label", label);
        const picked = node;
        button.addEventListener("click", () => onPick(picked));
        parentEl.append(button, " ");
        const siblings = node.parent.children;
        if (siblings[0] === node) {
          for (const variation of siblings.slice(1)) {
            const box = document.createElement("span");
            box.className = "variation";
            add(box, variation, true);
            parentEl.append(box, " ");
          }
        }
        const next = node.children[0];
        if (next && node.parent.children.length > 1 && siblings[0] === node) needNumber = true;
        node = next;
      }
    };
    // The root's first child prints the root's other children as its variations, like
    // every node does for its siblings: they are drawn there and nowhere else.
    if (this.root.children[0]) add(line, this.root.children[0], true);
    if (!this.root.children.length) line.textContent = "—";
    container.append(line);
  }
}
