/**
 * One subscriber's buffer of events: an array ring that keeps publication order, grows up to its
 * capacity (unbounded for a lossless subscriber) and, when full, decides which event is lost.
 *
 * The rule (DESIGN §4): a lifecycle event is never lost to make room for another kind.
 * - Not full: the event is added.
 * - Full, the new event is a lifecycle event: the oldest non-lifecycle event makes room. Only when
 *   the buffer holds nothing but lifecycle events is one lost: the new one (`dropping`) or the
 *   oldest (`sliding`).
 * - Full, another kind: `dropping` loses the new event; `sliding` loses the oldest non-lifecycle
 *   event, or the new one when the buffer holds only lifecycle events.
 *
 * Removing the oldest non-lifecycle event shifts the lifecycle events in front of it by one
 * slot: the cost is the number of lifecycle events buffered ahead of it, usually none.
 */

/** Which of two events a full buffer loses for a new one of the same priority. */
export type Overflow = "dropping" | "sliding"

/** Initial slots of a ring; it doubles as needed. */
const INITIAL_SLOTS = 16

/** A bounded (or unbounded: `capacity = Infinity`) FIFO ring of events. */
export class Mailbox<A> {
  /** A power of two long, so that positions wrap with a mask; at most `capacity` are used. */
  private slots: Array<A | undefined>
  private mask: number
  private head = 0
  private count = 0
  private readonly capacity: number
  private readonly overflow: Overflow
  private readonly isLifecycle: (item: A) => boolean

  /** `capacity` ≥ 1, or `Infinity` for a buffer that never loses an event. */
  constructor(capacity: number, overflow: Overflow, isLifecycle: (item: A) => boolean) {
    this.capacity = capacity
    this.overflow = overflow
    this.isLifecycle = isLifecycle
    this.slots = new Array(Math.min(INITIAL_SLOTS, 2 ** Math.ceil(Math.log2(Math.min(capacity, 2 ** 30)))))
    this.mask = this.slots.length - 1
  }

  /** Events buffered. */
  get size(): number {
    return this.count
  }

  /**
   * Adds `item` (`lifecycle` says whether it is a lifecycle event). Returns the event lost to a
   * full buffer — `item` itself or the one evicted for it — or `undefined` when none was.
   */
  offer(item: A, lifecycle: boolean): A | undefined {
    if (this.count < this.capacity && (this.count < this.slots.length || this.grow())) {
      this.slots[(this.head + this.count) & this.mask] = item
      this.count++
      return undefined
    }
    if (!lifecycle && this.overflow === "dropping") return item
    const evicted = this.removeOldestOther() ?? (lifecycle && this.overflow === "sliding" ? this.shift() : undefined)
    if (evicted === undefined) return item
    this.slots[(this.head + this.count) & this.mask] = item
    this.count++
    return evicted
  }

  /** The oldest event, removed; `undefined` when empty. */
  shift(): A | undefined {
    if (this.count === 0) return undefined
    const item = this.slots[this.head]
    this.slots[this.head] = undefined
    this.head = (this.head + 1) & this.mask
    this.count--
    return item
  }

  /** Every buffered event, oldest first, removed. */
  drain(): Array<A> {
    const out = new Array<A>(this.count)
    const { slots, mask, head } = this
    for (let i = 0; i < out.length; i++) {
      const at = (head + i) & mask
      out[i] = slots[at]!
      slots[at] = undefined
    }
    this.head = 0
    this.count = 0
    return out
  }

  /** Doubles the ring; false when it already has room for `capacity` events. */
  private grow(): boolean {
    if (this.slots.length >= this.capacity) return false
    const next = new Array<A | undefined>(this.slots.length * 2)
    for (let i = 0; i < this.count; i++) next[i] = this.slots[(this.head + i) & this.mask]
    this.slots = next
    this.mask = next.length - 1
    this.head = 0
    return true
  }

  /** Removes and returns the oldest non-lifecycle event, shifting the lifecycle events ahead of it. */
  private removeOldestOther(): A | undefined {
    const { slots, mask, head } = this
    for (let i = 0; i < this.count; i++) {
      const item = slots[(head + i) & mask]!
      if (this.isLifecycle(item)) continue
      for (let j = i; j > 0; j--) slots[(head + j) & mask] = slots[(head + j - 1) & mask]
      slots[head] = undefined
      this.head = (head + 1) & mask
      this.count--
      return item
    }
    return undefined
  }
}
