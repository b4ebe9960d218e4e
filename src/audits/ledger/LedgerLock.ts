import {readFileSync, unlinkSync} from "node:fs";
import {hostname} from "node:os";
import {open, readFile, rename, unlink} from "node:fs/promises";
import {LedgerLockedError} from "../../errors.js";

interface LockOwner {
    readonly pid: number;
    readonly host: string;
    readonly since: string;
}

/**
 * An exclusive lock on a file, held as `<path>.lock` created with O_EXCL and holding the owner's
 * pid, host and start time. A lock whose pid is no longer running on this host (a run killed with
 * SIGKILL or a power cut leaves one behind) is taken over; a lock from another host cannot be
 * checked and is reported, with the file to delete once that run is known to be gone. A process
 * that exits while holding locks (Ctrl-C stops a command within its grace period, whether or not
 * the command got to release them) removes them as it exits.
 */
export class LedgerLock {
    private released = false;

    private constructor(
        public readonly path: string,
        private readonly content: string
    ) {}

    public static async acquire(target: string, field?: string): Promise<LedgerLock> {
        const path = `${target}.lock`;
        const content = JSON.stringify({pid: process.pid, host: hostname(), since: new Date().toISOString()} satisfies LockOwner);
        // Two attempts: the second follows the removal of a stale lock.
        for (let attempt = 0; attempt < 2; attempt++) {
            try {
                const handle = await open(path, "wx");
                try {
                    await handle.writeFile(`${content}\n`);
                    await handle.sync();
                } finally {
                    await handle.close();
                }
                const lock = new LedgerLock(path, content);
                holdOnExit(lock);
                return lock;
            } catch (error) {
                if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
            }
            const owner = await readOwner(path);
            if (owner !== undefined && (owner.host !== hostname() || isRunning(owner.pid))) {
                const where = owner.host === hostname() ? "" : ` on host ${owner.host}`;
                throw new LedgerLockedError(
                    `${target} is in use by process ${owner.pid}${where} (since ${owner.since}); wait for that run to finish` +
                        (owner.host === hostname() ? "" : `, or delete ${path} if it is gone`),
                    field
                );
            }
            await removeStale(path, owner);
        }
        throw new LedgerLockedError(
            `${target} was locked again while a stale lock was being removed; another run is starting on it`,
            field
        );
    }

    /** Removes the lock if it is still this process's. Idempotent. */
    public async release(): Promise<void> {
        if (this.released) return;
        this.released = true;
        held.delete(this);
        const current = await readFile(this.path, "utf8").catch(() => undefined);
        if (current?.trim() === this.content) await unlink(this.path).catch(() => undefined);
    }

    /** release() for a process that is exiting, where nothing asynchronous runs any more. */
    public releaseSync(): void {
        if (this.released) return;
        this.released = true;
        held.delete(this);
        try {
            if (readFileSync(this.path, "utf8").trim() === this.content) unlinkSync(this.path);
        } catch {
            // Gone already, or unreadable: nothing of this process's to remove.
        }
    }
}

/** The locks this process holds, released synchronously when it exits. */
const held = new Set<LedgerLock>();

function holdOnExit(lock: LedgerLock): void {
    if (held.size === 0 && !process.listeners("exit").includes(releaseHeldLocks)) process.on("exit", releaseHeldLocks);
    held.add(lock);
}

function releaseHeldLocks(): void {
    for (const lock of held) lock.releaseSync();
}

/** The lock's owner, or undefined for a lock cut short before its content was written (its creator died in between). */
async function readOwner(path: string): Promise<LockOwner | undefined> {
    let text: string;
    try {
        text = await readFile(path, "utf8");
    } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
    }
    try {
        const value = JSON.parse(text) as Partial<LockOwner>;
        if (Number.isSafeInteger(value.pid) && typeof value.host === "string")
            return {pid: value.pid!, host: value.host, since: typeof value.since === "string" ? value.since : "an unknown time"};
    } catch {
        // Unparseable: treated as stale below.
    }
    return undefined;
}

function isRunning(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (error) {
        // EPERM: the process exists but belongs to another user.
        return (error as NodeJS.ErrnoException).code === "EPERM";
    }
}

/**
 * Moves the stale lock aside under a name of this process's own (rename is atomic, so of two runs
 * taking over at once only one moves it) and deletes it; the caller then races for a fresh lock
 * with O_EXCL, which exactly one process wins.
 */
async function removeStale(path: string, owner: LockOwner | undefined): Promise<void> {
    const aside = `${path}.stale-${process.pid}`;
    try {
        await rename(path, aside);
    } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
    }
    const moved = await readOwner(aside);
    // What was moved is not the stale lock that was read: another run took over in between; put it back.
    if (moved !== undefined && (owner === undefined || moved.pid !== owner.pid || moved.since !== owner.since)) {
        await rename(aside, path);
        return;
    }
    await unlink(aside).catch(() => undefined);
}
