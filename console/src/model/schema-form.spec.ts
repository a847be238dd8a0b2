import { formFields, formValue } from './schema-form';

describe('formFields and formValue', () => {
  const schema = {
    type: 'object',
    required: ['approved', 'amount'],
    properties: {
      approved: { type: 'boolean', title: 'Approved', default: true },
      amount: { type: 'integer', description: 'In cents' },
      reason: { type: 'string' },
      level: { enum: ['low', 'high', 3] },
      extra: { type: 'object' },
    },
  };

  it('makes one field per property, typed and required as the schema says, in order', () => {
    expect(formFields(schema)).toEqual([
      { name: 'approved', label: 'Approved', kind: 'boolean', required: true, initial: 'true' },
      { name: 'amount', label: 'amount', kind: 'integer', required: true, description: 'In cents', initial: '' },
      { name: 'reason', label: 'reason', kind: 'text', required: false, initial: '' },
      { name: 'level', label: 'level', kind: 'choice', required: false, options: ['low', 'high', 3], initial: '' },
      { name: 'extra', label: 'extra', kind: 'json', required: false, initial: '' },
    ]);
  });

  it('answers the typed value, leaving out empty optional fields', () => {
    const fields = formFields(schema);
    expect(formValue(fields, { amount: '1200', level: '3', extra: '{"a":[1]}' })).toEqual({
      value: { approved: true, amount: 1200, level: 3, extra: { a: [1] } },
      problems: {},
    });
    expect(formValue(fields, { approved: '', amount: '5', reason: 'ok' }).value).toEqual({ approved: false, amount: 5, reason: 'ok' });
  });

  it('names what is wrong: a required field left empty, a number that is not one, bad JSON, a value not offered', () => {
    const fields = formFields(schema);
    expect(formValue(fields, { amount: '' })).toEqual({ problems: { amount: 'Required' } });
    expect(formValue(fields, { amount: '1.5' }).problems).toEqual({ amount: 'Not a whole number' });
    expect(formValue(fields, { amount: 'ten' }).problems).toEqual({ amount: 'Not a number' });
    expect(formValue(fields, { amount: '1', extra: '{' }).problems).toEqual({ extra: 'Not valid JSON' });
    expect(formValue(fields, { amount: '1', level: 'medium' }).problems).toEqual({ level: 'Not one of the choices' });
  });

  it('shows a schema that is not an object of properties as one JSON field, whose value is the answer', () => {
    const fields = formFields({ type: 'array' });
    expect(fields).toEqual([{ name: '', label: 'Value (JSON)', kind: 'json', required: true, initial: '' }]);
    expect(formValue(fields, { '': '[1,2]' })).toEqual({ value: [1, 2], problems: {} });
  });
});
