/** Text safe inside SVG element content and attribute values. */
export function escapeXml(text: string): string {
    return text.replace(/[&<>"']/g, (character) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})[character]!);
}
