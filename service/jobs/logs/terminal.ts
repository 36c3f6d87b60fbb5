/**
 * Worker output shown on a terminal (the service's stderr echo, `runpodkit logs`): a handler's line
 * must not drive the terminal of whoever reads it. Escape sequences (ESC: colours, a screen clear,
 * OSC 52 writing the clipboard, OSC 0 retitling the window), other C0 and C1 controls, DEL and the
 * bidirectional overrides that reorder what is shown are written as visible escapes instead (`\x1b`,
 * `\u202e`); a tab stays, and a newline stays where the caller keeps lines (a traceback).
 */
function unsafe(code: number): boolean {
  return (
    (code < 0x20 && code !== 0x09) ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

function visible(code: number): string {
  if (code === 0x0a) return "\\n";
  if (code === 0x0d) return "\\r";
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

export function terminalSafe(text: string, options: { keepNewlines?: boolean } = {}): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!unsafe(code) || (code === 0x0a && options.keepNewlines)) continue;
    out += text.slice(from, i) + visible(code);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/**
 * JSON text (JSON.stringify already escapes C0 controls) with what it leaves raw but a terminal may act
 * on (DEL, C1 controls, bidirectional overrides, U+2028/9) as \u escapes: still the same JSON value.
 */
export function terminalSafeJson(json: string): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (!(unsafe(code) || code === 0x2028 || code === 0x2029)) continue;
    out += `${json.slice(from, i)}\\u${code.toString(16).padStart(4, "0")}`;
    from = i + 1;
  }
  return from === 0 ? json : out + json.slice(from);
}
