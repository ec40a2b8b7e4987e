/**
 * Escapes text for HTML element content and double-quoted attribute values: the five characters that can end a
 * text run or an attribute become numeric character references (HTML Living Standard, "character references").
 *
 * @example
 * `<dd>${escapeHtml(userAgent)}</dd>`
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
