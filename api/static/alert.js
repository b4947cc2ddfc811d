// Messages shown to the person: one alert box per view, and the helpers both views use.

import { ApiError } from "./api.js";
import { RulesError } from "./rules.js";

export const $ = (selector) => document.querySelector(selector);

/**
 * One view's alert box: an error in plain words, with a countdown when it retries by
 * itself. `cause` names what the message is about ("service", "move", "link", ...), so
 * the code that sees the cause go away clears exactly that message and no other.
 */
export class Alert {
  constructor(node) {
    this.node = node;
    this.timer = null;
    this.cause = null;
  }

  show(message, { retryIn = null, kind = "error", cause = null } = {}) {
    clearInterval(this.timer);
    this.cause = cause;
    this.node.hidden = false;
    this.node.className = `alert ${kind}`;
    const text = document.createElement("span");
    text.className = "alert-text";
    text.textContent = message;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "alert-close";
    close.setAttribute("aria-label", "Dismiss this message");
    close.textContent = "×";
    close.addEventListener("click", () => this.clear());
    this.node.replaceChildren(text, close);
    if (retryIn) {
      const count = document.createElement("span");
      count.className = "alert-count";
      text.append(count);
      let left = retryIn;
      const tick = () => {
        count.textContent = left > 0 ? ` (retrying in ${left} s)` : " (retrying…)";
        left -= 1;
      };
      tick();
      this.timer = setInterval(tick, 1000);
    }
  }

  /** Clear the message; with `cause`, only if it is the one shown. */
  clear(cause = null) {
    if (cause !== null && this.cause !== cause) return;
    clearInterval(this.timer);
    this.cause = null;
    this.node.hidden = true;
    this.node.replaceChildren();
  }
}

export function errorText(err) {
  return err instanceof ApiError || err instanceof RulesError ? err.message : `Unexpected error: ${err.message}`;
}

/** A failure that goes away by itself (service down, rate limit, network): its message is
 * cleared as soon as anything arrives from the service again. */
export function isPassing(err) {
  return err instanceof ApiError && err.transient;
}

/**
 * Ask the person to confirm `question` in the page's modal dialog; resolves true for
 * "yes". A real <dialog>: focus moves into it, Escape cancels, screen readers hear it.
 */
export function confirmAction(question, yes) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = question;
  $("#confirm-yes").textContent = yes;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    $("#confirm-no").focus();
  });
}

/** True when the person asked the system for less motion. */
export function reducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
