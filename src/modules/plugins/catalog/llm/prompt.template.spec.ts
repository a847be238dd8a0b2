import { renderPrompt } from './prompt.template';

describe('renderPrompt', () => {
  const input = { ticket: { title: 'Login fails', lines: ['a', 'b'], count: 2, open: true, meta: { x: 1 } } };

  it('fills paths, indexing arrays, and renders non-strings as JSON', () => {
    expect(renderPrompt('{{ticket.title}}|{{ticket.lines.1}}|{{ticket.count}}|{{ticket.open}}|{{ticket.meta}}', input)).toBe(
      'Login fails|b|2|true|{"x":1}',
    );
  });

  it('renders a missing path, null and inherited properties as nothing', () => {
    expect(renderPrompt('[{{nope}}][{{ticket.nope.deeper}}][{{ticket.constructor}}][{{ticket.title.length}}]', input)).toBe('[][][][]');
  });

  it('gives the whole input for {{input}}, a string input as it is', () => {
    expect(renderPrompt('{{input}}', { a: 1 })).toBe('{"a":1}');
    expect(renderPrompt('Q: {{ input }}', 'why?')).toBe('Q: why?');
  });

  it('leaves text without placeholders alone', () => {
    expect(renderPrompt('no {placeholders} here {{ }}', input)).toBe('no {placeholders} here {{ }}');
  });
});
