import type {CodeBlock} from "./codeBlocks.js";

/** One command of a shell block: its words (quotes removed), and what the block shows after it. */
export interface ShellCommand {
    readonly block: CodeBlock;
    /** The command line as written (continuation lines joined), for messages. */
    readonly line: string;
    readonly words: readonly string[];
    /** The exit code the block shows for it (`…; echo "exit $?"` then a line `exit N`), or null. */
    readonly shownExit: number | null;
    /** A console block's output lines after the command (up to the next command), trimmed. */
    readonly shownOutput: readonly string[];
}

export const shellLanguages = new Set(["sh", "bash", "shell", "console"]);

/**
 * Splits a line as sh does for the quoting the docs use ('…' and "…", no escapes inside them) into
 * its commands (separated by `&&`, `||`, `;` or `|` outside quotes) and each command's words;
 * a `#` comment after whitespace ends the line.
 */
export function splitShellLine(line: string): string[][] {
    const commands: string[][] = [[]];
    let word: string | null = null;
    const endWord = (): void => {
        if (word !== null) commands[commands.length - 1].push(word);
        word = null;
    };
    for (let index = 0; index < line.length; index++) {
        const character = line[index];
        if (character === "'" || character === '"') {
            const close = line.indexOf(character, index + 1);
            const end = close < 0 ? line.length : close;
            word = (word ?? "") + line.slice(index + 1, end);
            index = end;
        } else if (/\s/.test(character)) {
            endWord();
        } else if (character === "#" && word === null) {
            break;
        } else if (character === ";" || character === "|" || character === "&") {
            endWord();
            if (line[index + 1] === character) index++;
            commands.push([]);
        } else {
            word = (word ?? "") + character;
        }
    }
    endWord();
    return commands.filter((command) => command.length > 0);
}

/**
 * The commands of a shell block. In a console block only `$ ` lines are commands and the other
 * lines are their output; in sh, bash and shell blocks every line is one. `echo` commands (the
 * docs' `; echo "exit $?"`) are not listed: they show the exit code of the command before them.
 */
export function shellCommands(block: CodeBlock): ShellCommand[] {
    const console = block.language === "console";
    const lines = block.body.replace(/\\\n\s*/g, " ").split("\n");
    const commands: ShellCommand[] = [];
    lines.forEach((raw, index) => {
        const line = raw.trim();
        if (console ? !line.startsWith("$ ") : line === "" || line.startsWith("#")) return;
        const text = console ? line.slice(2) : line;
        const following = lines.slice(index + 1);
        const nextCommand = console ? following.findIndex((next) => next.trim().startsWith("$ ")) : 0;
        const output = console ? following.slice(0, nextCommand < 0 ? undefined : nextCommand).map((next) => next.trim()) : [];
        const exitLine = output.map((next) => /^exit (\d+)$/.exec(next)).find((match) => match !== null);
        const shownExit = text.includes('echo "exit $?"') && exitLine != null ? Number(exitLine[1]) : null;
        for (const words of splitShellLine(text))
            if (words[0] !== "echo")
                commands.push({
                    block,
                    line: text,
                    words,
                    shownExit,
                    shownOutput: output.filter((next) => next !== "" && !/^exit \d+$/.test(next))
                });
    });
    return commands;
}

/** The words after `specgate` of a `specgate …` or `npx specgate …` command (environment assignments before it allowed), else null. */
export function specgateArguments(words: readonly string[]): string[] | null {
    let index = 0;
    while (index < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[index])) index++;
    if (words[index] === "npx") index++;
    return words[index] === "specgate" ? words.slice(index + 1) : null;
}
